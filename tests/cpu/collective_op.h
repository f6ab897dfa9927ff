#pragma once
// A program's collective operation for tests without a GPU: the program only compares the ranges,
// so `send` and `recv` may point anywhere (never dereferenced).
#include <string>

#include "harness/program.h"

namespace tandem_test {

inline tandem::bench::Op collective_op(tandem::Collective kind, const void* send, void* recv, int64_t count,
                                       const std::string& name = "c") {
  tandem::bench::Op op;
  op.kind = tandem::bench::Op::Kind::Collective;
  op.name = name;
  op.call.kind = kind;
  op.call.send = send;
  op.call.recv = recv;
  op.call.count = count;
  op.call.dtype = tandem::DType::BF16;
  return op;
}

}  // namespace tandem_test
