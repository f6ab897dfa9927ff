#pragma once
// NVTX's wide names (nvtxRangePushW, NVTX_MESSAGE_TYPE_UNICODE) as the UTF-8 text that the steps'
// pattern, the stats and the trace use. Pure, so it is tested on CPU.
#include <string>

namespace tandem::preload {

// `text` (wchar_t: UTF-32 on Linux) as UTF-8; "" for null. A value that is no Unicode scalar value
// (a surrogate, above U+10FFFF) becomes U+FFFD, as a decoder writes what it cannot read, so the name
// stays valid UTF-8 in the JSON documents.
std::string utf8_of_wide(const wchar_t* text);

}  // namespace tandem::preload
