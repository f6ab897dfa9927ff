"""Looks up every name the interposer hooks the way Python programs do (ctypes attribute access,
which calls dlsym and, on NULL, reads dlerror) and through libc's dlsym, dlvsym and dlerror directly,
in the global scope, with RTLD_NEXT and in each library's own handle: first before any CUDA library
is loaded, then with libcuda, cuBLAS and cuBLASLt loaded locally, then promoted to the global scope.

Usage: ctypes_lookups.py HOOK_NAMES_FILE
HOOK_NAMES_FILE: <build>/bin/tandem_hook_names.txt, generated from src/include/tandem/hook_list.h.

Prints whether each lookup found something and the dlerror() text after it: without the interposer
and with it these must be the same (the addresses differ by design: a hooked name resolves to the
interposer's wrapper).
"""
import ctypes
import os
import sys

from program_output import emit

RTLD_DEFAULT = ctypes.c_void_p(0)
RTLD_NEXT = ctypes.c_void_p(-1)
NO_SUCH_VERSION = b"TANDEM_NO_SUCH_VERSION_1"

libc = ctypes.CDLL(None)
dlsym = libc.dlsym
dlsym.restype = ctypes.c_void_p
dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
dlvsym = libc.dlvsym
dlvsym.restype = ctypes.c_void_p
dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
dlerror = libc.dlerror
dlerror.restype = ctypes.c_char_p
dlerror.argtypes = []


def error_text():
    text = dlerror()
    return None if text is None else text.decode(errors="replace")


def raw_lookup(handle, name, version=None):
    """[found, dlerror() after the call, dlerror() once more (must then be None)]."""
    error_text()  # clear any earlier error
    address = dlvsym(handle, name.encode(), version) if version else dlsym(handle, name.encode())
    return [bool(address), error_text(), error_text()]


def attribute_lookup(library, name):
    """ctypes' own lookup: the function, or AttributeError carrying dlerror()'s text."""
    try:
        getattr(library, name)
        return [True, None]
    except AttributeError as e:
        return [False, str(e)]


def lookups(names, handles, libraries):
    out = {}
    for name in names:
        entry = {}
        for label, handle in handles.items():
            entry["dlsym " + label] = raw_lookup(handle, name)
            entry["dlvsym " + label] = raw_lookup(handle, name, NO_SUCH_VERSION)
        for label, library in libraries.items():
            entry["ctypes " + label] = attribute_lookup(library, name)
        out[name] = entry
    return out


def load_first(candidates, mode):
    for soname in candidates:
        try:
            return soname, ctypes.CDLL(soname, mode=mode)
        except OSError:
            continue
    return None, None


def main():
    with open(sys.argv[1]) as f:
        names = f.read().split()
    if not names:
        print("no hooked names in " + sys.argv[1], file=sys.stderr)
        return 1
    program = ctypes.CDLL(None)
    digest = {"hooked_names": names}
    digest["before_loading"] = lookups(names, {"default": RTLD_DEFAULT, "next": RTLD_NEXT,
                                               "program": ctypes.c_void_p(program._handle)}, {"program": program})

    # Loaded locally, as a plugin would load them: visible through their handles only.
    loaded = {}
    for label, candidates in (("libcuda", ["libcuda.so.1"]),
                              ("libcublas", ["libcublas.so.13", "libcublas.so.12", "libcublas.so"]),
                              ("libcublasLt", ["libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"])):
        soname, library = load_first(candidates, os.RTLD_LOCAL)
        if library is not None:
            loaded[label] = (soname, library)
    digest["loaded"] = {label: soname for label, (soname, _) in loaded.items()}
    handles = {"default": RTLD_DEFAULT, "next": RTLD_NEXT}
    handles.update({label: ctypes.c_void_p(library._handle) for label, (_, library) in loaded.items()})
    libraries = {"program": program}
    libraries.update({label: library for label, (_, library) in loaded.items()})
    digest["loaded_locally"] = lookups(names, handles, libraries)

    # Promoted to the global scope (dlopen again with RTLD_GLOBAL): now found without a handle too.
    for label, (soname, _) in loaded.items():
        ctypes.CDLL(soname, mode=os.RTLD_GLOBAL | os.RTLD_NOLOAD)
    digest["loaded_globally"] = lookups(names, handles, {"program": ctypes.CDLL(None)})
    return emit("ctypes_lookups", digest)


if __name__ == "__main__":
    sys.exit(main())
