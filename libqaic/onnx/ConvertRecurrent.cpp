// SPDX-License-Identifier: Apache-2.0
// LSTM, GRU and RNN, what torch.nn.LSTM, GRU and RNN export to: unrolled over the sequence at
// import time (its length is static, as every shape of an imported model) into the IR's gemm,
// element-wise, slicing and activation ops. Per direction, the input projection of the whole
// sequence is one gemm; each step adds one gemm of the hidden state (two for a GRU whose reset
// gate applies before the recurrent weights).
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/OpError.hpp"
#include "onnx/ConstantMath.hpp"
#include "onnx/Converter.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

enum class Cell { Lstm, Gru, Rnn };

class Unrolled {
 public:
  Unrolled(Converter& c, Cell cell) : c_(c), cell_(cell) {
    gates_ = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
    c.requireRank(0, {3});
    const ir::Dims x = c.dims(0);
    batchwise_ = c.attributes().integer("layout", 0) != 0;
    seq_ = batchwise_ ? x[1] : x[0];
    batch_ = batchwise_ ? x[0] : x[1];
    input_ = x[2];
    const std::string direction = c.attributes().string("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      c.attributes().fail("direction", "must be forward, reverse or bidirectional, not '" + direction + "'");
    reverseOnly_ = direction == "reverse";
    directions_ = direction == "bidirectional" ? 2 : 1;
    hidden_ = c.attributes().integer("hidden_size", 0);
    const ir::Dims w = c.dims(1);
    if (w.size() != 3 || w[0] != directions_ || w[2] != input_ || w[1] % gates_ != 0)
      c.fail("input 'W' must be [" + std::to_string(directions_) + ", " + std::to_string(gates_) + " * hidden_size, " +
             std::to_string(input_) + "]");
    if (hidden_ <= 0) hidden_ = w[1] / gates_;
    if (w[1] != gates_ * hidden_)
      c.fail("input 'W' has " + std::to_string(w[1]) + " rows, not " + std::to_string(gates_) + " * hidden_size " +
             std::to_string(hidden_));
    requireDims(2, "R", {directions_, gates_ * hidden_, hidden_});
    if (c.hasInput(3)) requireDims(3, "B", {directions_, 2 * gates_ * hidden_});
    if (c.hasInput(4)) requireFullSequences();
    if (c.hasInput(5)) requireDims(5, "initial_h", {directions_, batch_, hidden_});
    if (cell == Cell::Lstm && c.hasInput(6)) requireDims(6, "initial_c", {directions_, batch_, hidden_});
    if (cell == Cell::Lstm && c.hasInput(7)) requireDims(7, "P", {directions_, 3 * hidden_});
    if (cell == Cell::Lstm && c.attributes().integer("input_forget", 0) != 0)
      c.attributes().fail("input_forget", "coupled input and forget gates are not supported");
    if (c.attributes().has("clip")) clip_ = c.attributes().number("clip", 0);
    if (clip_ && !(*clip_ > 0)) c.attributes().fail("clip", "must be > 0");
    linearBeforeReset_ = cell == Cell::Gru && c.attributes().integer("linear_before_reset", 0) != 0;
    readActivations();
  }

  void run() {
    const std::string x = batchwise_ ? transposed(c_.tensor(0), {1, 0, 2}, "x_by_time") : c_.tensor(0);
    const std::string rows = c_.reshaped(x, {seq_ * batch_, input_}, "x_rows");
    std::vector<std::string> outputs, lastHidden, lastCell;  // per direction
    for (int64_t d = 0; d < directions_; ++d) {
      const Direction result = direction(rows, d, reverseOnly_ || d == 1);
      outputs.push_back(result.sequence);
      lastHidden.push_back(result.hidden);
      lastCell.push_back(result.cell);
    }
    // Y: [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]).
    if (c_.hasOutput(0)) {
      const std::string y = concatAll(outputs, 1, "y");
      if (batchwise_) {
        c_.emit("transpose", {{"src", y}}, {{"dst", c_.output(0)}}, {integersParam("axes", {2, 0, 1, 3})});
      } else {
        c_.alias(0, y);
      }
    }
    finalState(1, lastHidden, "y_h");
    if (cell_ == Cell::Lstm) finalState(2, lastCell, "y_c");
  }

 private:
  struct Direction {
    std::string sequence;  // [seq, 1, batch, hidden]
    std::string hidden;    // [1, batch, hidden]
    std::string cell;      // LSTM: [1, batch, hidden]
  };

  void requireDims(std::size_t i, const std::string& role, const ir::Dims& dims) {
    if (irDims(c_.dims(i)) != dims) c_.fail("input '" + role + "' must have dims " + ir::formatDims(dims));
  }

  // Packed sequences of other lengths would need masking per batch entry: sequence_lens is taken
  // only when it is known here and every entry is the full length.
  void requireFullSequences() {
    const ImportedTensor* lens = c_.constant(4);
    if (lens == nullptr)
      c_.fail("input 'sequence_lens' must be known at import time (sequences of other lengths are not supported)");
    for (int64_t n : c_.constantIntegers(4, "sequence_lens")) {
      if (n != seq_)
        c_.fail("input 'sequence_lens' holds " + std::to_string(n) + "; only the full length " + std::to_string(seq_) +
                " is supported");
    }
  }

  void readActivations() {
    const std::vector<std::string> defaults = cell_ == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                              : cell_ == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                   : std::vector<std::string>{"Tanh"};
    const auto perDirection = defaults.size();
    for (int64_t d = 0; d < directions_; ++d) activations_.insert(activations_.end(), defaults.begin(), defaults.end());
    if (const auto* given = c_.attributes().find("activations")) {
      if (given->strings_size() != static_cast<int>(perDirection * static_cast<std::size_t>(directions_)))
        c_.attributes().fail("activations", "must name " + std::to_string(perDirection * directions_) + " functions");
      for (int i = 0; i < given->strings_size(); ++i) {
        const std::string& name = given->strings(i);
        if (name != "Sigmoid" && name != "Tanh" && name != "Relu" && name != "Softsign" && name != "Softplus")
          c_.attributes().fail("activations",
                               "'" + name + "' is not supported (Sigmoid, Tanh, Relu, Softsign, Softplus)");
        activations_[static_cast<std::size_t>(i)] = name;
      }
    }
    if (c_.attributes().has("activation_alpha") || c_.attributes().has("activation_beta"))
      c_.attributes().fail("activation_alpha", "activation parameters are not supported");
  }

  const std::string& activation(int64_t d, std::size_t k) const {
    const std::size_t perDirection = cell_ == Cell::Lstm ? 3 : cell_ == Cell::Gru ? 2 : 1;
    return activations_[static_cast<std::size_t>(d) * perDirection + k];
  }

  std::string activate(const std::string& function, const std::string& src, const std::string& hint) {
    std::string in = src;
    if (clip_) {
      in = c_.temporary(hint + "_clipped");
      c_.emit("clip", {{"src", src}}, {{"dst", in}}, {numberParam("min", -*clip_), numberParam("max", *clip_)});
    }
    const std::string dst = c_.temporary(hint);
    if (function == "Sigmoid") {
      c_.emit("sigmoid", {{"src", in}}, {{"dst", dst}});
    } else if (function == "Relu") {
      c_.emit("relu", {{"src", in}}, {{"dst", dst}});
    } else {
      unaryFunction(c_, function == "Tanh" ? "tanh" : function == "Softsign" ? "softsign" : "softplus", in, dst);
    }
    return dst;
  }

  std::string binary(const char* op, const std::string& a, const std::string& b, const std::string& hint) {
    const std::string dst = c_.temporary(hint);
    onnx::binary(c_, op, a, b, dst);
    return dst;
  }

  std::string transposed(const std::string& src, const std::vector<int64_t>& axes, const std::string& hint) {
    const std::string dst = c_.temporary(hint);
    c_.emit("transpose", {{"src", src}}, {{"dst", dst}}, {integersParam("axes", axes)});
    return dst;
  }

  // a [M, K] times b [N, K] transposed, plus `bias` broadcast to [M, N].
  std::string gemm(const std::string& a, const std::string& b, const std::string& bias, const std::string& hint) {
    const std::string dst = c_.temporary(hint);
    c_.emit("gemm", {{"a", a}, {"b", b}, {"c", bias}}, {{"dst", dst}},
            {numberParam("alpha", 1), numberParam("beta", 1), boolParam("trans_a", false), boolParam("trans_b", true)});
    return dst;
  }

  // Pairwise, so that a long sequence copies each step O(log seq) times, not O(seq).
  std::string concatAll(std::vector<std::string> parts, int64_t axis, const std::string& hint) {
    while (parts.size() > 1) {
      std::vector<std::string> next;
      for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
        const std::string dst = c_.temporary(hint);
        c_.emit("concat", {{"src1", parts[i]}, {"src2", parts[i + 1]}}, {{"dst", dst}},
                {numberParam("axis", static_cast<double>(axis))});
        next.push_back(dst);
      }
      if (parts.size() % 2) next.push_back(parts.back());
      parts = std::move(next);
    }
    return parts.front();
  }

  // Direction d's slice of an input [dirs, ...] as `dims`, or zeros of `dims` when absent.
  std::string perDirection(std::size_t input, int64_t d, const ir::Dims& dims, const std::string& hint) {
    if (!c_.hasInput(input)) return c_.zeros(c_.dtype(0), dims, hint);
    return c_.reshaped(c_.sliced(c_.tensor(input), 0, d, d + 1, hint + "_slice"), dims, hint);
  }

  Direction direction(const std::string& rows, int64_t d, bool reverse) {
    const int64_t width = gates_ * hidden_;
    const std::string w = perDirection(1, d, {width, input_}, "w");
    const std::string r = perDirection(2, d, {width, hidden_}, "r");
    const std::string bias = perDirection(3, d, {2 * width}, "b");
    const std::string inputBias = c_.sliced(bias, 0, 0, width, "wb");
    const std::string recurrentBias = c_.sliced(bias, 0, width, 2 * width, "rb");
    // The input projection of every step at once; LSTM and RNN fold both biases into it.
    const std::string projectionBias = cell_ == Cell::Gru ? inputBias
                                                          : binary("TL_SUM", inputBias, recurrentBias, "bias");
    const std::string projected = c_.reshaped(gemm(rows, w, projectionBias, "projected_rows"), {seq_, batch_, width},
                                              "projected");
    std::string hidden = perDirection(5, d, {batch_, hidden_}, "h0");
    std::string cell = cell_ == Cell::Lstm ? perDirection(6, d, {batch_, hidden_}, "c0") : "";
    std::vector<std::string> peepholes;
    if (cell_ == Cell::Lstm && c_.hasInput(7)) {
      const std::string p = perDirection(7, d, {3 * hidden_}, "p");
      for (int64_t k = 0; k < 3; ++k) peepholes.push_back(c_.sliced(p, 0, k * hidden_, (k + 1) * hidden_, "p_gate"));
    }
    const std::string noBias = c_.zeros(c_.dtype(0), {1}, "no_bias");
    std::vector<std::string> steps(static_cast<std::size_t>(seq_));
    for (int64_t i = 0; i < seq_; ++i) {
      const int64_t t = reverse ? seq_ - 1 - i : i;
      const std::string xt = c_.reshaped(c_.sliced(projected, 0, t, t + 1, "x_step"), {batch_, width}, "x_t");
      auto gate = [&](const std::string& all, int64_t k) {
        return c_.sliced(all, 1, k * hidden_, (k + 1) * hidden_, "gate");
      };
      if (cell_ == Cell::Lstm) {
        // Gates in ONNX's order: input, output, forget, cell.
        const std::string pre = binary("TL_SUM", xt, gemm(hidden, r, noBias, "recurrent"), "pre");
        std::string gi = gate(pre, 0), go = gate(pre, 1), gf = gate(pre, 2);
        if (!peepholes.empty()) {
          gi = binary("TL_SUM", gi, binary("TL_MUL", peepholes[0], cell, "peep_i"), "gi");
          gf = binary("TL_SUM", gf, binary("TL_MUL", peepholes[2], cell, "peep_f"), "gf");
        }
        const std::string in = activate(activation(d, 0), gi, "i");
        const std::string forget = activate(activation(d, 0), gf, "f");
        const std::string candidate = activate(activation(d, 1), gate(pre, 3), "c_candidate");
        cell = binary("TL_SUM", binary("TL_MUL", forget, cell, "kept"), binary("TL_MUL", in, candidate, "added"), "c");
        if (!peepholes.empty()) go = binary("TL_SUM", go, binary("TL_MUL", peepholes[1], cell, "peep_o"), "go");
        const std::string out = activate(activation(d, 0), go, "o");
        hidden = binary("TL_MUL", out, activate(activation(d, 2), cell, "c_act"), "h");
      } else if (cell_ == Cell::Gru) {
        // Gates in ONNX's order: update (z), reset (r), hidden.
        std::string hiddenGate;
        std::string update, reset;
        if (linearBeforeReset_) {
          const std::string rec = gemm(hidden, r, recurrentBias, "recurrent");
          update = activate(activation(d, 0), binary("TL_SUM", gate(xt, 0), gate(rec, 0), "gz"), "z");
          reset = activate(activation(d, 0), binary("TL_SUM", gate(xt, 1), gate(rec, 1), "gr"), "r_gate");
          hiddenGate = binary("TL_SUM", gate(xt, 2), binary("TL_MUL", reset, gate(rec, 2), "reset_rec"), "gh");
        } else {
          const std::string rZr = c_.sliced(r, 0, 0, 2 * hidden_, "r_zr");
          const std::string rH = c_.sliced(r, 0, 2 * hidden_, 3 * hidden_, "r_h");
          const std::string rec = gemm(hidden, rZr, c_.sliced(recurrentBias, 0, 0, 2 * hidden_, "rb_zr"), "recurrent");
          update = activate(activation(d, 0), binary("TL_SUM", gate(xt, 0), gate(rec, 0), "gz"), "z");
          reset = activate(activation(d, 0), binary("TL_SUM", gate(xt, 1), gate(rec, 1), "gr"), "r_gate");
          const std::string resetHidden = binary("TL_MUL", reset, hidden, "reset_hidden");
          const std::string recH = gemm(resetHidden, rH, c_.sliced(recurrentBias, 0, 2 * hidden_, width, "rb_h"),
                                        "rec_h");
          hiddenGate = binary("TL_SUM", gate(xt, 2), recH, "gh");
        }
        const std::string candidate = activate(activation(d, 1), hiddenGate, "h_candidate");
        // (1 - z) * candidate + z * previous = candidate + z * (previous - candidate)
        hidden = binary("TL_SUM", candidate,
                        binary("TL_MUL", update, binary("TL_SUB", hidden, candidate, "h_diff"), "h_kept"), "h");
      } else {
        hidden = activate(activation(d, 0), binary("TL_SUM", xt, gemm(hidden, r, noBias, "recurrent"), "pre"), "h");
      }
      steps[static_cast<std::size_t>(t)] = c_.reshaped(hidden, {1, 1, batch_, hidden_}, "y_t");
    }
    return {concatAll(steps, 0, "y_direction"), c_.reshaped(hidden, {1, batch_, hidden_}, "h_last"),
            cell.empty() ? "" : c_.reshaped(cell, {1, batch_, hidden_}, "c_last")};
  }

  // Y_h or Y_c: [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
  void finalState(std::size_t output, const std::vector<std::string>& perDirection, const std::string& hint) {
    if (!c_.hasOutput(output)) return;
    const std::string all = concatAll(perDirection, 0, hint);
    if (batchwise_) {
      c_.emit("transpose", {{"src", all}}, {{"dst", c_.output(output)}}, {integersParam("axes", {1, 0, 2})});
    } else {
      c_.alias(output, all);
    }
  }

  Converter& c_;
  Cell cell_;
  int64_t gates_ = 1, seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0, directions_ = 1;
  bool batchwise_ = false, reverseOnly_ = false, linearBeforeReset_ = false;
  std::optional<float> clip_;
  std::vector<std::string> activations_;
};

}  // namespace

void convertLstm(Converter& c) { Unrolled(c, Cell::Lstm).run(); }
void convertGru(Converter& c) { Unrolled(c, Cell::Gru).run(); }
void convertRnn(Converter& c) { Unrolled(c, Cell::Rnn).run(); }

}  // namespace qaic::onnx
