include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS tandem_core tandem EXPORT tandemTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/tandem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tandem_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT tandemTargets NAMESPACE tandem:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)
configure_package_config_file(cmake/tandemConfig.cmake.in ${CMAKE_BINARY_DIR}/tandemConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tandemConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tandemConfig.cmake ${CMAKE_BINARY_DIR}/tandemConfigVersion.cmake
              cmake/FindNCCL.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)
# The documents and scripts that `tandem --help` and the README point to, beside the binaries.
install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} PATTERN "log" EXCLUDE)
install(PROGRAMS scripts/plot-results.py scripts/results-table.py scripts/gpu-check.sh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tandem/scripts)
install(FILES scripts/tandem_results.py DESTINATION ${CMAKE_INSTALL_DATADIR}/tandem/scripts)
