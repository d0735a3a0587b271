// SPDX-License-Identifier: Apache-2.0
// conv2d, deconv2d, pools and resize against direct (naive) implementations written from the
// documented formulas, over parameter sets covering groups, dilation, stride and autopad.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "GraphBuilder.hpp"

namespace qaic::kernels::test {
namespace {

struct Window {
  int64_t k, s, d, padBegin, padEnd;
};

// lightnet-ops.md: SAME_* makes out = ceil(in/stride); UPPER puts floor(total/2) first.
Window resolve(const std::string& autopad, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  if (autopad == "VALID") return {k, s, d, 0, 0};
  if (autopad == "NOTSET") return {k, s, d, pb, pe};
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
  const int64_t first = autopad == "SAME_UPPER" ? total / 2 : total - total / 2;
  return {k, s, d, first, total - first};
}

int64_t outSize(int64_t in, const Window& w) { return (in + w.padBegin + w.padEnd - ((w.k - 1) * w.d + 1)) / w.s + 1; }

struct ConvCase {
  int64_t n, c, h, w, oc, group, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> padding;
  std::string autopad;
};

std::vector<float> naiveConv(const ConvCase& p, const std::vector<float>& x, const std::vector<float>& wt,
                             const std::vector<float>& bias, const Window& wh, const Window& ww, int64_t oh,
                             int64_t ow) {
  const int64_t icg = p.c / p.group, ocg = p.oc / p.group;
  std::vector<float> y(static_cast<std::size_t>(p.n * p.oc * oh * ow));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.oc; ++o)
      for (int64_t yy = 0; yy < oh; ++yy)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double sum = bias[o];
          const int64_t g = o / ocg;
          for (int64_t i = 0; i < icg; ++i)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = yy * wh.s - wh.padBegin + ky * wh.d;
                const int64_t ix = xx * ww.s - ww.padBegin + kx * ww.d;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                sum += x[((n * p.c + g * icg + i) * p.h + iy) * p.w + ix] * wt[((o * icg + i) * p.kh + ky) * p.kw + kx];
              }
          y[((n * p.oc + o) * oh + yy) * ow + xx] = static_cast<float>(sum);
        }
  return y;
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
}

class KernelsConv2d : public ::testing::TestWithParam<ConvCase> {};

TEST_P(KernelsConv2d, MatchesDirectConvolution) {
  const ConvCase p = GetParam();
  const Window wh = resolve(p.autopad, p.h, p.kh, p.sh, p.dh, p.padding[0], p.padding[2]);
  const Window ww = resolve(p.autopad, p.w, p.kw, p.sw, p.dw, p.padding[1], p.padding[3]);
  const int64_t oh = outSize(p.h, wh), ow = outSize(p.w, ww);
  const auto x = randomFloats(static_cast<std::size_t>(p.n * p.c * p.h * p.w), 1);
  const auto wt = randomFloats(static_cast<std::size_t>(p.oc * (p.c / p.group) * p.kh * p.kw), 2);
  const auto bias = randomFloats(static_cast<std::size_t>(p.oc), 3);
  const Json params{{"group", p.group},     {"size", {p.kh, p.kw}},     {"stride", {p.sh, p.sw}},
                    {"padding", p.padding}, {"dilation", {p.dh, p.dw}}, {"autopad", p.autopad}};
  const auto want = naiveConv(p, x, wt, bias, wh, ww, oh, ow);
  const ir::Dims wdims{p.oc, p.c / p.group, p.kh, p.kw};
  // Constant weights (packed once at build) ...
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {p.n, p.c, p.h, p.w})
      .create("w", "TL_FLOAT", wdims, toDoubles(wt))
      .create("b", "TL_FLOAT", {p.oc}, toDoubles(bias))
      .op("conv", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, params)
      .output("y", "TL_FLOAT", {p.n, p.oc, oh, ow});
  const auto out = runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {p.n, p.c, p.h, p.w}, x)});
  expectNear(out.at(0).values<float>(), want);
  // ... and weights that arrive as an input (reordered every run).
  GraphBuilder gi;
  gi.input("x", "TL_FLOAT", {p.n, p.c, p.h, p.w})
      .input("w", "TL_FLOAT", wdims)
      .create("b", "TL_FLOAT", {p.oc}, toDoubles(bias))
      .op("conv", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, params)
      .output("y", "TL_FLOAT", {p.n, p.oc, oh, ow});
  const auto out2 = runGraph(gi.graph(), {HostTensor::of(ir::DType::Float, {p.n, p.c, p.h, p.w}, x),
                                          HostTensor::of(ir::DType::Float, wdims, wt)});
  expectNear(out2.at(0).values<float>(), want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KernelsConv2d,
    ::testing::Values(ConvCase{1, 3, 7, 9, 4, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "NOTSET"},
                      ConvCase{2, 4, 8, 8, 6, 2, 3, 3, 2, 2, 1, 1, {0, 1, 2, 0}, "NOTSET"},
                      ConvCase{1, 6, 9, 7, 6, 6, 3, 3, 1, 1, 2, 2, {2, 2, 2, 2}, "NOTSET"},  // depthwise, dilated
                      ConvCase{1, 3, 10, 11, 5, 1, 4, 3, 3, 2, 1, 1, {0, 0, 0, 0}, "SAME_UPPER"},
                      ConvCase{1, 3, 10, 11, 5, 1, 4, 3, 3, 2, 1, 1, {0, 0, 0, 0}, "SAME_LOWER"},
                      ConvCase{1, 2, 6, 5, 3, 1, 2, 2, 1, 1, 2, 1, {5, 5, 5, 5}, "VALID"},
                      ConvCase{2, 8, 5, 5, 4, 4, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NOTSET"}));

// The N-D conv (1 to 3 spatial dims): one window per dim, pads [begin..., end...].
struct ConvNdCase {
  int64_t n, c, oc, group;
  std::vector<int64_t> spatial, kernel, stride, dilation, pads;
};

std::vector<float> naiveConvNd(const ConvNdCase& p, const std::vector<float>& x, const std::vector<float>& wt,
                               const std::vector<float>& bias, const std::vector<int64_t>& out) {
  const std::size_t k = p.spatial.size();
  const int64_t icg = p.c / p.group, ocg = p.oc / p.group;
  const auto volume = [](const std::vector<int64_t>& d) {
    int64_t v = 1;
    for (int64_t e : d) v *= e;
    return v;
  };
  const int64_t inVolume = volume(p.spatial), outVolume = volume(out), kernelVolume = volume(p.kernel);
  std::vector<float> y(static_cast<std::size_t>(p.n * p.oc * outVolume));
  std::vector<int64_t> at(k), tap(k);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.oc; ++o)
      for (int64_t flatOut = 0; flatOut < outVolume; ++flatOut) {
        for (std::size_t d = k, rest = static_cast<std::size_t>(flatOut); d-- > 0;) {
          at[d] = static_cast<int64_t>(rest % static_cast<std::size_t>(out[d]));
          rest /= static_cast<std::size_t>(out[d]);
        }
        double sum = bias[static_cast<std::size_t>(o)];
        const int64_t g = o / ocg;
        for (int64_t i = 0; i < icg; ++i)
          for (int64_t flatTap = 0; flatTap < kernelVolume; ++flatTap) {
            for (std::size_t d = k, rest = static_cast<std::size_t>(flatTap); d-- > 0;) {
              tap[d] = static_cast<int64_t>(rest % static_cast<std::size_t>(p.kernel[d]));
              rest /= static_cast<std::size_t>(p.kernel[d]);
            }
            int64_t flatIn = 0;
            bool inside = true;
            for (std::size_t d = 0; d < k; ++d) {
              const int64_t pos = at[d] * p.stride[d] - p.pads[d] + tap[d] * p.dilation[d];
              inside = inside && pos >= 0 && pos < p.spatial[d];
              flatIn = flatIn * p.spatial[d] + pos;
            }
            if (!inside) continue;
            sum += x[static_cast<std::size_t>((n * p.c + g * icg + i) * inVolume + flatIn)] *
                   wt[static_cast<std::size_t>((o * icg + i) * kernelVolume + flatTap)];
          }
        y[static_cast<std::size_t>((n * p.oc + o) * outVolume + flatOut)] = static_cast<float>(sum);
      }
  return y;
}

class KernelsConvNd : public ::testing::TestWithParam<ConvNdCase> {};

TEST_P(KernelsConvNd, MatchesDirectConvolution) {
  const ConvNdCase p = GetParam();
  const std::size_t k = p.spatial.size();
  ir::Dims xdims{p.n, p.c}, wdims{p.oc, p.c / p.group}, ydims{p.n, p.oc};
  std::vector<int64_t> out;
  for (std::size_t d = 0; d < k; ++d) {
    out.push_back(outSize(p.spatial[d], {p.kernel[d], p.stride[d], p.dilation[d], p.pads[d], p.pads[d + k]}));
    xdims.push_back(p.spatial[d]);
    wdims.push_back(p.kernel[d]);
    ydims.push_back(out.back());
  }
  const auto x = randomFloats(static_cast<std::size_t>(ir::elementCount(xdims)), 1);
  const auto wt = randomFloats(static_cast<std::size_t>(ir::elementCount(wdims)), 2);
  const auto bias = randomFloats(static_cast<std::size_t>(p.oc), 3);
  const Json params{
      {"group", p.group}, {"size", p.kernel}, {"stride", p.stride}, {"dilation", p.dilation}, {"pads", p.pads}};
  GraphBuilder g;
  g.input("x", "TL_FLOAT", xdims)
      .create("w", "TL_FLOAT", wdims, toDoubles(wt))
      .create("b", "TL_FLOAT", {p.oc}, toDoubles(bias))
      .op("conv", "conv", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, params)
      .output("y", "TL_FLOAT", ydims);
  const auto result = runGraph(g.graph(), {HostTensor::of(ir::DType::Float, xdims, x)});
  expectNear(result.at(0).values<float>(), naiveConvNd(p, x, wt, bias, out));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KernelsConvNd,
    ::testing::Values(ConvNdCase{1, 3, 4, 1, {5, 7, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},
                      ConvNdCase{2, 4, 6, 2, {6, 9, 10}, {3, 1, 3}, {1, 2, 1}, {2, 1, 1}, {1, 0, 2, 1, 0, 2}},
                      ConvNdCase{1, 6, 6, 6, {4, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2, 0, 2, 2}},
                      ConvNdCase{1, 2, 3, 1, {7, 4, 4}, {3, 1, 1}, {2, 1, 1}, {1, 1, 1}, {0, 0, 0, 1, 0, 0}},
                      ConvNdCase{2, 5, 4, 1, {11}, {3}, {2}, {2}, {1, 2}}));

// The N-D transposed conv: weight [C, O/group, k...], pads [begin..., end...].
struct DeconvNdCase {
  int64_t n, c, ocPerGroup, group;
  std::vector<int64_t> spatial, kernel, stride, dilation, pads, outputPadding;
};

class KernelsDeconvNd : public ::testing::TestWithParam<DeconvNdCase> {};

TEST_P(KernelsDeconvNd, MatchesDirectTransposedConvolution) {
  const DeconvNdCase p = GetParam();
  const std::size_t k = p.spatial.size();
  const int64_t oc = p.ocPerGroup * p.group, icg = p.c / p.group;
  ir::Dims xdims{p.n, p.c}, wdims{p.c, p.ocPerGroup}, ydims{p.n, oc};
  for (std::size_t d = 0; d < k; ++d) {
    xdims.push_back(p.spatial[d]);
    wdims.push_back(p.kernel[d]);
    ydims.push_back(p.stride[d] * (p.spatial[d] - 1) + p.outputPadding[d] + (p.kernel[d] - 1) * p.dilation[d] + 1 -
                    p.pads[d] - p.pads[d + k]);
  }
  const auto x = randomFloats(static_cast<std::size_t>(ir::elementCount(xdims)), 1);
  const auto wt = randomFloats(static_cast<std::size_t>(ir::elementCount(wdims)), 2);
  const auto bias = randomFloats(static_cast<std::size_t>(oc), 3);
  // Scatter every input cell through every kernel tap: out[i * stride + t * dilation - begin].
  const ir::Dims spatialOut(ydims.begin() + 2, ydims.end());
  const int64_t inVolume = ir::elementCount(ir::Dims(p.spatial.begin(), p.spatial.end()));
  const int64_t kernelVolume = ir::elementCount(ir::Dims(p.kernel.begin(), p.kernel.end()));
  const int64_t outVolume = ir::elementCount(spatialOut);
  std::vector<double> want(static_cast<std::size_t>(p.n * oc * outVolume));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t cell = 0; cell < outVolume; ++cell)
        want[static_cast<std::size_t>((n * oc + o) * outVolume + cell)] = bias[static_cast<std::size_t>(o)];
  std::vector<int64_t> at(k), tap(k);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ci = 0; ci < p.c; ++ci)
      for (int64_t flatIn = 0; flatIn < inVolume; ++flatIn) {
        for (std::size_t d = k, rest = static_cast<std::size_t>(flatIn); d-- > 0;) {
          at[d] = static_cast<int64_t>(rest % static_cast<std::size_t>(p.spatial[d]));
          rest /= static_cast<std::size_t>(p.spatial[d]);
        }
        const int64_t g = ci / icg;
        for (int64_t j = 0; j < p.ocPerGroup; ++j)
          for (int64_t flatTap = 0; flatTap < kernelVolume; ++flatTap) {
            for (std::size_t d = k, rest = static_cast<std::size_t>(flatTap); d-- > 0;) {
              tap[d] = static_cast<int64_t>(rest % static_cast<std::size_t>(p.kernel[d]));
              rest /= static_cast<std::size_t>(p.kernel[d]);
            }
            int64_t flatOut = 0;
            bool inside = true;
            for (std::size_t d = 0; d < k; ++d) {
              const int64_t pos = at[d] * p.stride[d] + tap[d] * p.dilation[d] - p.pads[d];
              inside = inside && pos >= 0 && pos < spatialOut[d];
              flatOut = flatOut * spatialOut[d] + pos;
            }
            if (!inside) continue;
            const int64_t o = g * p.ocPerGroup + j;
            want[static_cast<std::size_t>((n * oc + o) * outVolume + flatOut)] +=
                static_cast<double>(x[static_cast<std::size_t>((n * p.c + ci) * inVolume + flatIn)]) *
                wt[static_cast<std::size_t>((ci * p.ocPerGroup + j) * kernelVolume + flatTap)];
          }
      }
  const Json params{{"group", p.group},       {"size", p.kernel}, {"stride", p.stride},
                    {"dilation", p.dilation}, {"pads", p.pads},   {"output_padding", p.outputPadding}};
  GraphBuilder gb;
  gb.input("x", "TL_FLOAT", xdims)
      .create("w", "TL_FLOAT", wdims, toDoubles(wt))
      .create("b", "TL_FLOAT", {oc}, toDoubles(bias))
      .op("up", "deconv", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, params)
      .output("y", "TL_FLOAT", ydims);
  const auto result = runGraph(gb.graph(), {HostTensor::of(ir::DType::Float, xdims, x)});
  expectNear(result.at(0).values<float>(), std::vector<float>(want.begin(), want.end()));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KernelsDeconvNd,
    ::testing::Values(
        DeconvNdCase{1, 4, 3, 1, {3, 4, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {0, 0, 0}},
        DeconvNdCase{2, 4, 2, 2, {3, 3, 4}, {3, 1, 3}, {2, 1, 2}, {1, 1, 2}, {1, 0, 2, 1, 0, 1}, {1, 0, 1}},
        // output_padding past pad_end: the last cells hold only the bias.
        DeconvNdCase{1, 2, 2, 1, {2, 3, 3}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 0, 0}, {0, 1, 1}},
        DeconvNdCase{1, 3, 2, 1, {6}, {3}, {2}, {1}, {1, 0}, {1}}));

struct DeconvCase {
  int64_t n, c, h, w, ocPerGroup, group, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> padding, outputPadding;
};

class KernelsDeconv2d : public ::testing::TestWithParam<DeconvCase> {};

TEST_P(KernelsDeconv2d, MatchesDirectTransposedConvolution) {
  const DeconvCase p = GetParam();
  const int64_t oc = p.ocPerGroup * p.group, icg = p.c / p.group;
  const int64_t oh = p.sh * (p.h - 1) + p.outputPadding[0] + (p.kh - 1) * p.dh + 1 - p.padding[0] - p.padding[2];
  const int64_t ow = p.sw * (p.w - 1) + p.outputPadding[1] + (p.kw - 1) * p.dw + 1 - p.padding[1] - p.padding[3];
  const auto x = randomFloats(static_cast<std::size_t>(p.n * p.c * p.h * p.w), 4);
  const auto wt = randomFloats(static_cast<std::size_t>(p.c * p.ocPerGroup * p.kh * p.kw), 5);
  const auto bias = randomFloats(static_cast<std::size_t>(oc), 6);
  // Scatter form: every input cell adds its weighted kernel into the output.
  std::vector<double> want(static_cast<std::size_t>(p.n * oc * oh * ow));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t i = 0; i < oh * ow; ++i) want[static_cast<std::size_t>((n * oc + o) * oh * ow + i)] = bias[o];
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ci = 0; ci < p.c; ++ci)
      for (int64_t y = 0; y < p.h; ++y)
        for (int64_t xx = 0; xx < p.w; ++xx)
          for (int64_t oo = 0; oo < p.ocPerGroup; ++oo)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t g = ci / icg;
                const int64_t o = g * p.ocPerGroup + oo;
                const int64_t yy = y * p.sh + ky * p.dh - p.padding[0];
                const int64_t xo = xx * p.sw + kx * p.dw - p.padding[1];
                if (yy < 0 || yy >= oh || xo < 0 || xo >= ow) continue;
                want[static_cast<std::size_t>(((n * oc + o) * oh + yy) * ow + xo)] +=
                    x[((n * p.c + ci) * p.h + y) * p.w + xx] * wt[((ci * p.ocPerGroup + oo) * p.kh + ky) * p.kw + kx];
              }
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {p.n, p.c, p.h, p.w})
      .create("w", "TL_FLOAT", {p.c, p.ocPerGroup, p.kh, p.kw}, toDoubles(wt))
      .create("b", "TL_FLOAT", {oc}, toDoubles(bias))
      .op("deconv", "deconv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}},
          {{"group", p.group},
           {"size", {p.kh, p.kw}},
           {"stride", {p.sh, p.sw}},
           {"output_dims", {0, 0, 0, 0}},
           {"padding", p.padding},
           {"output_padding", p.outputPadding},
           {"dilation", {p.dh, p.dw}},
           {"autopad", "NOTSET"}})
      .output("y", "TL_FLOAT", {p.n, oc, oh, ow});
  const auto out = runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {p.n, p.c, p.h, p.w}, x)});
  expectNear(out.at(0).values<float>(), std::vector<float>(want.begin(), want.end()));
}

INSTANTIATE_TEST_SUITE_P(Cases, KernelsDeconv2d,
                         ::testing::Values(DeconvCase{1, 2, 3, 4, 3, 1, 3, 3, 1, 1, 1, 1, {0, 0, 0, 0}, {0, 0}},
                                           DeconvCase{2, 4, 3, 3, 2, 2, 3, 2, 2, 2, 1, 1, {1, 0, 1, 1}, {1, 1}},
                                           DeconvCase{1, 3, 4, 3, 2, 1, 2, 2, 3, 2, 2, 1, {0, 0, 0, 0}, {2, 1}},
                                           DeconvCase{1, 4, 2, 2, 1, 4, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, {1, 0}}));

struct PoolCase {
  std::string optype;
  int64_t h, w, kh, kw, sh, sw;
  std::vector<int64_t> padding;
  std::string autopad;
};

class KernelsPool2d : public ::testing::TestWithParam<PoolCase> {};

TEST_P(KernelsPool2d, MatchesDirectPoolingIgnoringPadding) {
  const PoolCase p = GetParam();
  const int64_t N = 2, C = 3;
  const Window wh = resolve(p.autopad, p.h, p.kh, p.sh, 1, p.padding[0], p.padding[2]);
  const Window ww = resolve(p.autopad, p.w, p.kw, p.sw, 1, p.padding[1], p.padding[3]);
  const int64_t oh = outSize(p.h, wh), ow = outSize(p.w, ww);
  const auto x = randomFloats(static_cast<std::size_t>(N * C * p.h * p.w), 7, -5,
                              -1);  // all negative: padding must not win a max
  std::vector<float> want;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int count = 0;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = y * p.sh - wh.padBegin + ky, ix = xx * p.sw - ww.padBegin + kx;
            if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
            const float v = x[(nc * p.h + iy) * p.w + ix];
            best = std::max<double>(best, v);
            sum += v;
            ++count;
          }
        want.push_back(static_cast<float>(p.optype == "maxpool2d" ? best : sum / count));
      }
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {N, C, p.h, p.w})
      .op("pool", p.optype, {{"src", "x"}}, {{"dst", "y"}},
          {{"size", {p.kh, p.kw}}, {"stride", {p.sh, p.sw}}, {"padding", p.padding}, {"autopad", p.autopad}})
      .output("y", "TL_FLOAT", {N, C, oh, ow});
  const auto out = runGraph(g.graph(), {HostTensor::of(ir::DType::Float, {N, C, p.h, p.w}, x)});
  expectNear(out.at(0).values<float>(), want, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, KernelsPool2d,
                         ::testing::Values(PoolCase{"maxpool2d", 7, 8, 3, 3, 2, 2, {1, 1, 1, 1}, "NOTSET"},
                                           PoolCase{"avgpool2d", 7, 8, 3, 3, 2, 2, {1, 1, 1, 1}, "NOTSET"},
                                           PoolCase{"maxpool2d", 9, 5, 2, 3, 1, 2, {0, 2, 1, 0}, "NOTSET"},
                                           PoolCase{"avgpool2d", 9, 5, 2, 3, 1, 2, {0, 2, 1, 0}, "NOTSET"},
                                           PoolCase{"avgpool2d", 10, 7, 3, 2, 3, 2, {0, 0, 0, 0}, "SAME_UPPER"},
                                           PoolCase{"maxpool2d", 10, 7, 3, 2, 3, 2, {0, 0, 0, 0}, "SAME_LOWER"},
                                           PoolCase{"avgpool2d", 6, 6, 2, 2, 2, 2, {1, 1, 1, 1}, "VALID"}));

TEST(KernelsResize, NearestFollowsTheDocumentedRule) {
  GraphBuilder g;
  g.create("x", "TL_INT32", {1, 3}, {1, 2, 3})
      .op("r", "resize", {{"src", "x"}}, {{"dst", "y"}}, {{"mode", "TL_NEAREST"}, {"dims", {2, 5}}})
      .output("y", "TL_INT32", {2, 5});
  const auto v = runGraph(g.graph()).at(0).values<int32_t>();
  // src = roundf((dst + 0.5) * 3/5 - 0.5): -0.2->0, 0.4->0, 1.0->1, 1.6->2, 2.2->2
  EXPECT_EQ(v, (std::vector<int32_t>{1, 1, 2, 3, 3, 1, 1, 2, 3, 3}));
}

TEST(KernelsResize, LinearHalfPixel) {
  GraphBuilder g;
  g.create("x", "TL_FLOAT", {1, 1, 2, 2}, {0, 1, 2, 3})
      .op("r", "upsample", {{"src", "x"}}, {{"dst", "y"}}, {{"mode", "TL_LINEAR"}, {"scales", {1, 1, 2, 2}}})
      .output("y", "TL_FLOAT", {1, 1, 4, 4});
  const auto v = runGraph(g.graph()).at(0).values<float>();
  // Along one axis of 2 -> 4: coordinates -0.25, 0.25, 0.75, 1.25 -> 0, 0.25, 0.75, 1 (clamped).
  const float a[] = {0, 0.25f, 0.75f, 1};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_NEAR(v[y * 4 + x], 2 * a[y] + a[x], 1e-6) << y << "," << x;
}

// grid_sample reads src where the grid points: (x, y) = (-1, -1) is the centre of the top-left
// pixel's outer corner without align_corners, and x moves along the last axis.
GraphBuilder gridSample(const std::string& mode, const std::string& padding, const std::string& dtype = "TL_FLOAT") {
  GraphBuilder g;
  g.create("x", dtype, {1, 2, 2, 3}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15})
      .input("grid", "TL_FLOAT", {1, 1, 4, 2})
      .op("s", "grid_sample", {{"src", "x"}, {"grid", "grid"}}, {{"dst", "y"}},
          {{"mode", mode}, {"padding_mode", padding}, {"align_corners", true}})
      .output("y", dtype, {1, 2, 1, 4});
  return g;
}

TEST(KernelsGridSample, NonFiniteAndFarCoordinatesReadNothingWithZerosPadding) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // align_corners: x = (g + 1) / 2 * 2, y = (g + 1) / 2 * 1. Points: (0, 0) -> src[0][0];
  // inf, NaN and a coordinate past any int64 read nothing.
  const auto grid = HostTensor::of<float>(ir::DType::Float, {1, 1, 4, 2}, {-1, -1, inf, 0, nan, 0, 1e30f, -1e30f});
  for (const std::string mode : {"linear", "nearest", "cubic"}) {
    SCOPED_TRACE(mode);
    const auto v = runGraph(gridSample(mode, "zeros").graph(), {grid}).at(0).values<float>();
    EXPECT_EQ(v, (std::vector<float>{0, 0, 0, 0, 10, 0, 0, 0}));
  }
}

TEST(KernelsGridSample, BorderPaddingTakesTheEdgeOfFarCoordinates) {
  const float inf = std::numeric_limits<float>::infinity();
  // (1, 1) is the bottom-right pixel; +inf clamps to the right edge, -1e30 to the top; (0, 0)
  // lies halfway between the middle column's two pixels.
  const auto grid = HostTensor::of<float>(ir::DType::Float, {1, 1, 4, 2}, {1, 1, inf, 1, 1e30f, -1e30f, 0, 0});
  const auto v = runGraph(gridSample("linear", "border").graph(), {grid}).at(0).values<float>();
  EXPECT_EQ(v, (std::vector<float>{5, 5, 2, 2.5f, 15, 15, 12, 12.5f}));
}

TEST(KernelsGridSample, NearestCopiesIntegerElements) {
  // The pixel centres in align_corners: x = 1 and y = 0.5 rounds to even (0); y = 1.5 is beyond.
  const auto grid = HostTensor::of<float>(ir::DType::Float, {1, 1, 4, 2}, {0, -1, 0, 0, 1, 1, 1, 2});
  const auto v = runGraph(gridSample("nearest", "zeros", "TL_INT32").graph(), {grid}).at(0).values<int32_t>();
  EXPECT_EQ(v, (std::vector<int32_t>{1, 1, 5, 0, 11, 11, 15, 0}));
}

TEST(KernelsGridSample, LinearOverThreeSpatialAxes) {
  // src [1, 1, 2, 2, 2] holds 4z + 2y + x, which trilinear interpolation reproduces exactly.
  GraphBuilder g;
  g.create("x", "TL_FLOAT", {1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})
      .input("grid", "TL_FLOAT", {1, 2, 1, 1, 3})
      .op("s", "grid_sample", {{"src", "x"}, {"grid", "grid"}}, {{"dst", "y"}},
          {{"mode", "linear"}, {"padding_mode", "zeros"}, {"align_corners", true}})
      .output("y", "TL_FLOAT", {1, 1, 2, 1, 1});
  // Grid components are (x, y, z): (0, -1, 1) -> (0.5, 0, 1); (1, 0.5, -0.5) -> (1, 0.75, 0.25).
  const auto grid = HostTensor::of<float>(ir::DType::Float, {1, 2, 1, 1, 3}, {0, -1, 1, 1, 0.5f, -0.5f});
  const auto v = runGraph(g.graph(), {grid}).at(0).values<float>();
  EXPECT_NEAR(v[0], 4 * 1 + 2 * 0 + 0.5, 1e-6);
  EXPECT_NEAR(v[1], 4 * 0.25 + 2 * 0.75 + 1, 1e-6);
}

// roi_align over src [1, 1, 2, 2] = [[1, 2], [3, 4]], one sample per bin.
GraphBuilder roiAlign(const std::string& mode, bool halfPixel, double image = 0, double samplingRatio = 1) {
  GraphBuilder g;
  g.create("x", "TL_FLOAT", {1, 1, 2, 2}, {1, 2, 3, 4})
      .input("rois", "TL_FLOAT", {2, 4})
      .create("b", "TL_INT64", {2}, {0, image})
      .op("r", "roi_align", {{"src", "x"}, {"rois", "rois"}, {"batch_indices", "b"}}, {{"dst", "y"}},
          {{"mode", mode},
           {"output_dims", {1, 1}},
           {"sampling_ratio", samplingRatio},
           {"spatial_scale", 1.0},
           {"half_pixel", halfPixel}})
      .output("y", "TL_FLOAT", {2, 1, 1, 1});
  return g;
}

TEST(KernelsRoiAlign, AverageAndMaxOfTheWeightedCells) {
  // Region [0, 0, 1, 1]: without half_pixel the sample is at (0.5, 0.5), the four cells weighed
  // 0.25 each: their sum 2.5, or (max mode) the largest weighted cell, 4 * 0.25. With half_pixel
  // the region starts at -0.5 and its sample lands on cell (0, 0). Region [5, 5, 6, 6] lies more
  // than a cell outside the image: 0.
  const auto rois = HostTensor::of<float>(ir::DType::Float, {2, 4}, {0, 0, 1, 1, 5, 5, 6, 6});
  EXPECT_EQ(runGraph(roiAlign("avg", false).graph(), {rois}).at(0).values<float>(), (std::vector<float>{2.5f, 0}));
  EXPECT_EQ(runGraph(roiAlign("max", false).graph(), {rois}).at(0).values<float>(), (std::vector<float>{1, 0}));
  EXPECT_EQ(runGraph(roiAlign("avg", true).graph(), {rois}).at(0).values<float>(), (std::vector<float>{1, 0}));
}

// A region a million cells wide samples on a grid of 2^20 x 2^20 per bin; only the few samples
// near the image are visited (all of them once took 2^40 samples' memory), the others count 0.
TEST(KernelsRoiAlign, ARegionFarLargerThanTheImageCostsWhatTheImageDoes) {
  const auto rois = HostTensor::of<float>(ir::DType::Float, {2, 4}, {-1e6f, -1e6f, 1e6f, 1e6f, 0, 0, 1, 1});
  const auto average = runGraph(roiAlign("avg", false, 0, 0).graph(), {rois}).at(0).values<float>();
  EXPECT_GT(average[0], 0);
  EXPECT_LT(average[0], 1e-9);
  const auto largest = runGraph(roiAlign("max", false, 0, 0).graph(), {rois}).at(0).values<float>();
  EXPECT_GT(largest[0], 0);
  EXPECT_LE(largest[0], 4);
}

TEST(KernelsRoiAlign, BatchIndexOutsideTheImagesIsAnError) {
  const auto rois = HostTensor::of<float>(ir::DType::Float, {2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  try {
    runGraph(roiAlign("avg", false, 3).graph(), {rois});
    FAIL() << "expected an ExecutionError";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_indices[1] is 3, outside the 1 images of src"), std::string::npos)
        << e.what();
  }
}

// pool_argmax: where each window's maximum is, flattened over the whole src (N and C too).
TEST(KernelsPoolArgmax, IndicesCountOverTheWholeTensorSkipPaddingAndPreferNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto argmax = [](bool columnMajor) {
    GraphBuilder g;
    g.input("x", "TL_FLOAT", {1, 2, 2, 3})
        .op("a", "pool_argmax", {{"src", "x"}}, {{"dst", "i"}},
            {{"size", {2, 2}},
             {"stride", {1, 2}},
             {"dilation", {1, 1}},
             {"pads", {1, 0, 0, 1}},
             {"column_major", columnMajor}})
        .output("i", "TL_INT64", {1, 2, 2, 2});
    return g;
  };
  // Plane 0 ascends, so each window's last real cell wins; in plane 1 the NaN at (0, 1) wins both
  // windows it is in, over the 9 after it as well.
  const auto x = HostTensor::of<float>(ir::DType::Float, {1, 2, 2, 3}, {0, 1, 2, 3, 4, 5, 1, nan, 0, 9, 2, 9});
  // Windows start at rows -1 and 0 and columns 0 and 2 (the right pad adds column 3).
  const std::vector<int64_t> rowMajor{1, 2, 4, 5, 7, 8, 7, 11};
  EXPECT_EQ(runGraph(argmax(false).graph(), {x}).at(0).values<int64_t>(), rowMajor);
  // Column-major within a plane: (h, w) is h + 2w.
  EXPECT_EQ(runGraph(argmax(true).graph(), {x}).at(0).values<int64_t>(),
            (std::vector<int64_t>{2, 4, 3, 5, 8, 10, 8, 11}));
}

}  // namespace
}  // namespace qaic::kernels::test
