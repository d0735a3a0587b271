// SPDX-License-Identifier: Apache-2.0
// Einsum in its matmul forms: one or two operands, each letter once per operand, `...` allowed.
// Letters only one operand has and the output lacks are summed first (reduce); then operand A
// is arranged as [batch, free of A, contracted] and B as [batch, contracted, free of B], both
// flattened to 3-D for one batched matmul, and the product is reshaped and transposed into the
// output's order. A letter repeated within an operand (`ii->i`, `bii->bi`: a diagonal) is taken
// first: elements off the diagonal are replaced by zeros (where, so that an infinity off the
// diagonal does not turn into NaN as it would times a 0/1 mask) and the second axis is summed away.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>

#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

struct Operand {
  std::string letters;  // one per axis
  ir::Dims dims;
  std::string tensor;  // IR tensor
};

std::string stripped(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch != ' ' && ch != '\t') out += ch;
  }
  return out;
}

// Replaces `...` by as many fresh (upper-case) letters as the operand has extra axes; the same
// letters stand for the ellipsis everywhere, right-aligned.
std::string expandEllipsis(Converter& c, const std::string& term, std::size_t rank, const std::string& ellipsis) {
  const auto at = term.find("...");
  if (at == std::string::npos) return term;
  const std::size_t named = term.size() - 3;
  if (rank < named) c.fail("the equation names more axes than an operand has");
  const std::size_t extra = rank - named;
  if (extra > ellipsis.size()) c.fail("'...' covers more axes than the other terms");
  return term.substr(0, at) + ellipsis.substr(ellipsis.size() - extra) + term.substr(at + 3);
}

std::string permuted(Converter& c, const Operand& from, const std::string& order, const std::string& hint) {
  if (order == from.letters) return from.tensor;
  std::vector<int64_t> perm;
  for (char letter : order) perm.push_back(static_cast<int64_t>(from.letters.find(letter)));
  const std::string dst = c.temporary(hint);
  c.emit("transpose", {{"src", from.tensor}}, {{"dst", dst}}, {integersParam("axes", perm)});
  return dst;
}

// Sums the axes of `op` whose letters are not in `keep`.
void sumAway(Converter& c, Operand& op, const std::string& keep, const std::string& hint) {
  std::vector<int64_t> axes;
  std::string letters;
  ir::Dims dims;
  for (std::size_t i = 0; i < op.letters.size(); ++i) {
    if (keep.find(op.letters[i]) == std::string::npos) {
      axes.push_back(static_cast<int64_t>(i));
    } else {
      letters += op.letters[i];
      dims.push_back(op.dims[i]);
    }
  }
  if (axes.empty()) return;
  const std::string dst = c.temporary(hint);
  c.emit("reduce", {{"src", op.tensor}}, {{"dst", dst}},
         {stringParam("reduce_op", "sum"), integersParam("axes", axes), boolParam("keepdims", letters.empty())});
  op = {letters, dims, dst};
}

// The diagonal's mask is n x n bools.
constexpr int64_t kMaxDiagonal = 8192;

// Replaces every letter `op` repeats by its diagonal, until each letter appears once.
void takeDiagonals(Converter& c, Operand& op) {
  for (std::size_t q = 1; q < op.letters.size();) {
    const std::size_t p = op.letters.find(op.letters[q]);
    if (p == q) {
      ++q;
      continue;
    }
    const int64_t n = op.dims[p];
    if (op.dims[q] != n) {
      c.fail("letter '" + std::string(1, op.letters[q]) + "' is repeated over axes of sizes " + std::to_string(n) +
             " and " + std::to_string(op.dims[q]));
    }
    if (n > kMaxDiagonal) {
      c.fail("letter '" + std::string(1, op.letters[q]) + "' is repeated over axes of size " + std::to_string(n) +
             "; diagonals of at most " + std::to_string(kMaxDiagonal) + " are supported");
    }
    ir::Dims maskDims(op.dims.size(), 1);
    maskDims[p] = n;
    maskDims[q] = n;
    std::vector<int64_t> identity(static_cast<std::size_t>(n * n), 0);
    for (int64_t i = 0; i < n; ++i) identity[static_cast<std::size_t>(i * n + i)] = 1;
    const std::string mask = c.constantTensor(fromInt64s("", ir::DType::Bool, maskDims, identity),
                                              c.label() + "/diagonal_mask");
    const std::string kept = c.temporary("diagonal_kept");
    c.emit("where", {{"condition", mask}, {"src1", op.tensor}, {"src2", c.scalar(c.tensorDType(op.tensor), 0, "zero")}},
           {{"dst", kept}});
    const std::string diagonal = c.temporary("diagonal");
    c.emit("reduce", {{"src", kept}}, {{"dst", diagonal}},
           {stringParam("reduce_op", "sum"), integersParam("axes", {static_cast<int64_t>(q)}),
            boolParam("keepdims", false)});
    op.letters.erase(q, 1);
    op.dims.erase(op.dims.begin() + static_cast<std::ptrdiff_t>(q));
    op.tensor = diagonal;
  }
}

int64_t sizeOf(const Operand& op, char letter) { return op.dims[op.letters.find(letter)]; }

}  // namespace

void convertEinsum(Converter& c) {
  const std::size_t count = c.inputCount();
  if (count < 1 || count > 2) c.fail("only one or two operands are supported");
  const std::string equation = stripped(c.attributes().string("equation", ""));
  const auto arrow = equation.find("->");
  const std::string inputsText = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    const auto comma = inputsText.find(',', start);
    terms.push_back(inputsText.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != count)
    c.fail("the equation has " + std::to_string(terms.size()) + " terms for " + std::to_string(count) + " inputs");
  std::size_t ellipsisRank = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (terms[i].find("...") != std::string::npos) {
      ellipsisRank = std::max(ellipsisRank, c.dims(i).size() - (terms[i].size() - 3));
    }
  }
  const std::string ellipsis = std::string("ABCDEFGH").substr(0, std::min<std::size_t>(ellipsisRank, 8));
  std::vector<Operand> ops;
  std::map<char, int> occurrences;
  for (std::size_t i = 0; i < count; ++i) {
    Operand op{expandEllipsis(c, terms[i], c.dims(i).size(), ellipsis), c.dims(i), c.tensor(i)};
    if (op.letters.size() != op.dims.size()) c.fail("term '" + terms[i] + "' does not match the operand's rank");
    for (char letter : op.letters) {
      if (!std::isalpha(static_cast<unsigned char>(letter))) c.fail("equation '" + equation + "' is malformed");
    }
    takeDiagonals(c, op);
    for (char letter : op.letters) ++occurrences[letter];
    ops.push_back(std::move(op));
  }
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
    if (output.find("...") != std::string::npos) {
      const auto at = output.find("...");
      output = output.substr(0, at) + ellipsis + output.substr(at + 3);
    }
  } else {  // implicit: the ellipsis, then the letters used once, in order
    output = ellipsis;
    for (const auto& [letter, n] : occurrences) {
      if (n == 1 && ellipsis.find(letter) == std::string::npos) output += letter;
    }
  }
  for (char letter : output) {
    if (!occurrences.count(letter)) c.fail("output letter '" + std::string(1, letter) + "' is not in any input");
  }

  if (count == 1) {
    Operand& a = ops[0];
    sumAway(c, a, output, "sum");
    if (a.letters.empty()) return c.reshapeInto(0, a.tensor, {});
    return c.reshapeInto(0, permuted(c, a, output, "transposed"), [&] {
      ir::Dims dims;
      for (char letter : output) dims.push_back(sizeOf(a, letter));
      return dims;
    }());
  }

  Operand& a = ops[0];
  Operand& b = ops[1];
  sumAway(c, a, output + b.letters, "sum_a");
  sumAway(c, b, output + a.letters, "sum_b");
  std::string batch, freeA, freeB, contracted;
  for (char letter : a.letters) {
    const bool inB = b.letters.find(letter) != std::string::npos;
    const bool inOut = output.find(letter) != std::string::npos;
    if (inB && inOut)
      batch += letter;
    else if (inB)
      contracted += letter;
    else
      freeA += letter;
  }
  for (char letter : b.letters) {
    if (a.letters.find(letter) == std::string::npos) freeB += letter;
  }
  for (char letter : batch + contracted) {
    if (sizeOf(a, letter) != sizeOf(b, letter)) c.fail("letter '" + std::string(1, letter) + "' has different sizes");
  }
  const auto product = [](const Operand& op, const std::string& letters) {
    int64_t p = 1;
    for (char letter : letters) p *= sizeOf(op, letter);
    return p;
  };
  const int64_t batchSize = product(a, batch), m = product(a, freeA), k = product(a, contracted), n = product(b, freeB);
  const std::string left = c.reshaped(permuted(c, a, batch + freeA + contracted, "a"), {batchSize, m, k}, "a3");
  const std::string right = c.reshaped(permuted(c, b, batch + contracted + freeB, "b"), {batchSize, k, n}, "b3");
  const std::string productTensor = c.temporary("product");
  c.emit("matmul", {{"src1", left}, {"src2", right}}, {{"dst", productTensor}});
  Operand result{batch + freeA + freeB, {}, ""};
  for (char letter : batch + freeA) result.dims.push_back(sizeOf(a, letter));
  for (char letter : freeB) result.dims.push_back(sizeOf(b, letter));
  result.tensor = c.reshaped(productTensor, result.dims, "result");
  if (result.letters.size() != output.size()) c.fail("the output drops a letter both inputs share; not supported");
  ir::Dims outDims;
  for (char letter : output) outDims.push_back(sizeOf(result, letter));
  c.reshapeInto(0, permuted(c, result, output, "transposed"), outDims);
}

}  // namespace qaic::onnx
