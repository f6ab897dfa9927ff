#include "preload_library_check.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "tandem/run_contract.h"

namespace tandem::cli {
namespace {

using Ehdr = ElfW(Ehdr);
using Shdr = ElfW(Shdr);
using Sym = ElfW(Sym);

// The tables read from the file are bounded: the interposer's are a few KiB.
constexpr size_t kMaxTableBytes = 64u << 20;

class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) {}
  ~ReadOnlyFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  int fd() const { return fd_; }
  // Exactly `size` bytes at `offset`, or false.
  bool read_at(uint64_t offset, void* out, size_t size) const {
    size_t got = 0;
    while (got < size) {
      const ssize_t n = ::pread(fd_, static_cast<char*>(out) + got, size - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  int fd_;
};

// The header of this executable: the class, byte order and machine a preloaded library must share.
bool own_header(Ehdr& out) {
  const ReadOnlyFile self("/proc/self/exe");
  return self.fd() >= 0 && self.read_at(0, &out, sizeof out);
}

std::string machine_mismatch(const Ehdr& file) {
  Ehdr own{};
  if (!own_header(own)) return "";  // cannot tell; the loader will
  if (file.e_ident[EI_CLASS] != own.e_ident[EI_CLASS])
    return std::string("is a ") + (file.e_ident[EI_CLASS] == ELFCLASS32 ? "32" : "64") +
           "-bit library; this machine runs " + (own.e_ident[EI_CLASS] == ELFCLASS32 ? "32" : "64") + "-bit programs";
  if (file.e_ident[EI_DATA] != own.e_ident[EI_DATA]) return "is built for the other byte order";
  if (file.e_machine != own.e_machine)
    return "is built for another architecture (ELF machine " + std::to_string(file.e_machine) + ", this one " +
           std::to_string(own.e_machine) + ")";
  return "";
}

// The names of the functions and objects the file defines in its dynamic symbol table.
bool exported_names(const ReadOnlyFile& file, const Ehdr& header, uint64_t file_size, std::set<std::string>& names) {
  if (header.e_shoff == 0 || header.e_shentsize != sizeof(Shdr) || header.e_shnum == 0) return false;
  if (header.e_shoff > file_size || uint64_t{header.e_shnum} * sizeof(Shdr) > file_size - header.e_shoff) return false;
  std::vector<Shdr> sections(header.e_shnum);
  if (!file.read_at(header.e_shoff, sections.data(), sections.size() * sizeof(Shdr))) return false;
  for (const Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM || section.sh_entsize != sizeof(Sym) || section.sh_link >= sections.size())
      continue;
    const Shdr& strings = sections[section.sh_link];
    const auto fits = [&](const Shdr& s) {
      return s.sh_size <= kMaxTableBytes && s.sh_offset <= file_size && s.sh_size <= file_size - s.sh_offset;
    };
    if (!fits(section) || !fits(strings)) return false;
    std::vector<Sym> symbols(section.sh_size / sizeof(Sym));
    std::vector<char> text(strings.sh_size + 1, '\0');  // the extra NUL ends a truncated last name
    if (!file.read_at(section.sh_offset, symbols.data(), symbols.size() * sizeof(Sym)) ||
        !file.read_at(strings.sh_offset, text.data(), strings.sh_size))
      return false;
    for (const Sym& symbol : symbols) {
      const unsigned binding = ELF64_ST_BIND(symbol.st_info);
      if (symbol.st_shndx == SHN_UNDEF || (binding != STB_GLOBAL && binding != STB_WEAK)) continue;
      if (symbol.st_name < strings.sh_size) names.insert(text.data() + symbol.st_name);
    }
    return true;
  }
  return false;
}

}  // namespace

std::string why_not_interposer(const std::string& path) {
  const ReadOnlyFile file(path);
  if (file.fd() < 0) return std::string("cannot be read: ") + std::strerror(errno);
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0 || !S_ISREG(st.st_mode)) return "is not a regular file";
  Ehdr header{};
  if (static_cast<uint64_t>(st.st_size) < sizeof header || !file.read_at(0, &header, sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return "is not an ELF file";
  if (std::string mismatch = machine_mismatch(header); !mismatch.empty()) return mismatch;
  if (header.e_type != ET_DYN) return "is an ELF file but not a shared library";
  std::set<std::string> names;
  if (!exported_names(file, header, static_cast<uint64_t>(st.st_size), names))
    return "is a shared library without a readable dynamic symbol table";
  std::vector<std::string> required = {"dlsym", "dlerror"};
  required.insert(required.end(), std::begin(tandem::preload::kHookNames), std::end(tandem::preload::kHookNames));
  for (const auto& name : required)
    if (!names.count(name)) return "is a shared library but not tandem's interposer: it does not export " + name;
  return "";
}

}  // namespace tandem::cli
