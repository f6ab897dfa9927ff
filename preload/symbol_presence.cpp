#include "symbol_presence.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace tandem::preload {
namespace {

// Holds its own address once the loader has applied this library's relocations (a relative
// relocation fills it in); before, it holds the link-time value. Read through volatile, so that the
// compiler cannot assume the initialised value.
void* const volatile g_relocation_probe = const_cast<void**>(&g_relocation_probe);

bool relocated() { return g_relocation_probe == &g_relocation_probe; }

uint32_t gnu_hash(const char* name) {
  uint32_t h = 5381;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c; ++c) h = h * 33 + *c;
  return h;
}

uint32_t elf_hash(const char* name) {
  uint32_t h = 0;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c; ++c) {
    h = (h << 4) + *c;
    const uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

bool defines(const ElfW(Sym) & symbol, const char* strings, const char* name) {
  const unsigned type = ELF64_ST_TYPE(symbol.st_info), binding = ELF64_ST_BIND(symbol.st_info);
  return symbol.st_shndx != SHN_UNDEF && (binding == STB_GLOBAL || binding == STB_WEAK) &&
         (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE) &&
         std::strcmp(strings + symbol.st_name, name) == 0;
}

// Looks `name` up in one loaded object's dynamic symbol table, through its GNU or SysV hash table.
bool object_defines(const dl_phdr_info& info, const char* name) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < info.dlpi_phnum; ++i)
    if (info.dlpi_phdr[i].p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr + info.dlpi_phdr[i].p_vaddr);
  // No symbols, or this library itself (_DYNAMIC, from <link.h>: the linker's local symbol for the
  // dynamic section of the object that refers to it).
  if (!dynamic || dynamic == _DYNAMIC) return false;
  // glibc rewrites these addresses in place when it maps an object; a read-only dynamic section
  // (the vDSO) keeps them relative to the object's base.
  const auto address = [&](ElfW(Addr) value) { return value < info.dlpi_addr ? info.dlpi_addr + value : value; };
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* gnu = nullptr;
  const uint32_t* sysv = nullptr;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symbols = reinterpret_cast<const ElfW(Sym)*>(address(d->d_un.d_ptr));
    if (d->d_tag == DT_STRTAB) strings = reinterpret_cast<const char*>(address(d->d_un.d_ptr));
    if (d->d_tag == DT_GNU_HASH) gnu = reinterpret_cast<const uint32_t*>(address(d->d_un.d_ptr));
    if (d->d_tag == DT_HASH) sysv = reinterpret_cast<const uint32_t*>(address(d->d_un.d_ptr));
  }
  if (!symbols || !strings) return false;
  if (gnu) {
    const uint32_t buckets = gnu[0], first = gnu[1], bloom_words = gnu[2];
    if (buckets == 0) return false;
    const uint32_t* bucket = gnu + 4 + bloom_words * (sizeof(ElfW(Addr)) / 4);
    const uint32_t* chain = bucket + buckets;
    const uint32_t h = gnu_hash(name);
    for (uint32_t i = bucket[h % buckets]; i >= first && i != 0; ++i) {
      const uint32_t h2 = chain[i - first];
      if ((h | 1) == (h2 | 1) && defines(symbols[i], strings, name)) return true;
      if (h2 & 1) break;  // the end of this bucket's chain
    }
    return false;
  }
  if (sysv) {
    const uint32_t buckets = sysv[0];
    if (buckets == 0) return false;
    const uint32_t* bucket = sysv + 2;
    const uint32_t* chain = bucket + buckets;
    for (uint32_t i = bucket[elf_hash(name) % buckets]; i != STN_UNDEF; i = chain[i])
      if (defines(symbols[i], strings, name)) return true;
  }
  return false;
}

struct Search {
  const char* name;
  bool found;
};

int search_object(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  search->found = object_defines(*info, search->name);
  return search->found ? 1 : 0;  // non-zero stops the iteration
}

}  // namespace

bool defined_elsewhere(const char* name) noexcept {
  Search search{name, false};
  dl_iterate_phdr(&search_object, &search);
  return search.found;
}

void* export_target(const char* name, void* hook) noexcept {
  if (!relocated()) return hook;  // too early to call anything: answered as an interposer always did
  return defined_elsewhere(name) ? hook : nullptr;
}

}  // namespace tandem::preload
