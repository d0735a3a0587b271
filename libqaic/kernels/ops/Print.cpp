// SPDX-License-Identifier: Apache-2.0
// print and fprint (host-only ops: lightnet runs them, qaic-exec rejects them).
#include <fstream>
#include <iostream>

#include "kernels/TensorPrinter.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {

std::unique_ptr<Kernel> makePrint(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  std::string msg = ctx.op.string("msg");
  if (ctx.op.optype == "fprint") {
    std::string file = ctx.op.string("file");
    return makeKernel([&src, msg = std::move(msg), file = std::move(file)] {
      std::ofstream out(file, std::ios::trunc);
      if (!out) {
        std::cerr << "warning: fprint: cannot open '" << file << "' for writing; skipped\n";
        return;
      }
      out << msg << '\n' << formatTensor(src.dtype, src.dims, src.data());
    });
  }
  std::ostream* stream = ctx.options.printStream ? ctx.options.printStream : &std::cout;
  return makeKernel([&src, msg = std::move(msg), stream] {
    *stream << msg << '\n' << formatTensor(src.dtype, src.dims, src.data());
    stream->flush();
  });
}

}  // namespace qaic::kernels::ops
