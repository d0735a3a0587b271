// SPDX-License-Identifier: Apache-2.0
// Bad models get one clear ImportError naming the file, node, input or field.
#include <gtest/gtest.h>

#include <functional>

#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

TEST(OnnxErrors, EveryUnsupportedOperatorIsListedOnce) {
  ModelBuilder b;
  b.input("x", {1, 1, 4, 4}).output("y");
  b.node("Loop", {"x"}, {"a"}, "loop_3");
  b.node("Relu", {"a"}, {"b"});
  b.node("NonZero", {"b"}, {"c"}, "nz");
  b.node("Unique", {"c"}, {"y"});
  try {
    b.import();
    FAIL() << "import succeeded";
  } catch (const ImportError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test.onnx: unsupported operators: Loop (node 'loop_3'), NonZero (node 'nz'), "
                           "Unique (node '#3')"),
              std::string::npos)
        << message;
    EXPECT_EQ(e.unsupportedNodes(),
              (std::vector<std::string>{"Loop (node 'loop_3')", "NonZero (node 'nz')", "Unique (node '#3')"}));
  }
}

TEST(OnnxErrors, OperatorFromAnotherDomainIsUnsupported) {
  ModelBuilder b;
  b.input("x", {2}).output("y");
  b.node("Relu", {"x"}, {"y"}, "r").set_domain("com.example");
  EXPECT_NE(importError(b).find("com.example::Relu (node 'r')"), std::string::npos);
}

TEST(OnnxErrors, UndefinedSymbolNamesInputAndDim) {
  ModelBuilder b;
  b.input("images", {0, 3}, {"N"}).output("y");
  b.node("Relu", {"images"}, {"y"});
  const std::string message = importError(b);
  EXPECT_NE(message.find("graph input 'images' dim 0 is the symbol 'N'"), std::string::npos) << message;
}

TEST(OnnxErrors, NotAModel) {
  const std::string garbage = "\xff\xff\xff\xff this is not protobuf";
  try {
    importOnnxBytes(std::as_bytes(std::span(garbage.data(), garbage.size())), {}, "junk.onnx");
    FAIL() << "import succeeded";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("junk.onnx"), std::string::npos);
  }
  EXPECT_THROW(importOnnxBytes({}, {}, "empty.onnx"), ImportError);
}

TEST(OnnxErrors, MissingFileNamesThePath) {
  try {
    importOnnxFile("/nonexistent/dir/model.onnx");
    FAIL() << "import succeeded";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.onnx"), std::string::npos);
  }
}

TEST(OnnxErrors, RawDataSizeMustMatchDims) {
  ModelBuilder b;
  b.input("x", {4}).output("y");
  auto* w = b.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_raw_data(std::string(12, '\0'));
  b.node("Add", {"x", "w"}, {"y"});
  const std::string message = importError(b);
  EXPECT_NE(message.find("initializer 'w': raw_data holds 12 bytes but dims need 16"), std::string::npos) << message;
}

TEST(OnnxErrors, TypedFieldCountMustMatchDims) {
  ModelBuilder b;
  b.input("x", {4}).output("y");
  b.initializer("w", {4}, {1, 2, 3});
  b.node("Add", {"x", "w"}, {"y"});
  EXPECT_NE(importError(b).find("initializer 'w': float_data holds 3 values but dims need 4"), std::string::npos);
}

TEST(OnnxErrors, HugeDimsAreRejectedBeforeAllocation) {
  ModelBuilder b;
  b.input("x", {4}).output("y");
  auto* w = b.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) w->add_dims(int64_t{1} << 40);
  b.node("Add", {"x", "w"}, {"y"});
  EXPECT_NE(importError(b).find("initializer 'w'"), std::string::npos);
}

TEST(OnnxErrors, ReshapeShapeMustBeConstant) {
  ModelBuilder b;
  b.input("x", {2, 3}).input("shape", {2}, {}, ::onnx::TensorProto::INT64).output("y");
  b.node("Reshape", {"x", "shape"}, {"y"}, "r");
  const std::string message = importError(b);
  EXPECT_NE(message.find("Reshape node 'r': input 'shape' (shape) must be known at import time"), std::string::npos)
      << message;
}

TEST(OnnxErrors, NodeInputMustBeDefined) {
  ModelBuilder b;
  b.input("x", {2}).output("y");
  b.node("Add", {"x", "ghost"}, {"y"}, "add");
  EXPECT_NE(importError(b).find("Add node 'add': input 'ghost' is not produced"), std::string::npos);
}

TEST(OnnxErrors, ShapeRuleViolationNamesTheNode) {
  ModelBuilder b;
  b.input("a", {2, 3}).input("b", {4, 5}).output("y");
  b.node("MatMul", {"a", "b"}, {"y"}, "mm");
  const std::string message = importError(b);
  EXPECT_NE(message.find("MatMul node 'mm'"), std::string::npos) << message;
}

TEST(OnnxErrors, BatchNormTrainingModeIsRejected) {
  ModelBuilder b(15);
  b.input("x", {1, 2, 2, 2}).output("y");
  for (const char* name : {"s", "o", "m", "v"}) b.initializer(name, {2}, {1, 1});
  auto& bn = b.node("BatchNormalization", {"x", "s", "o", "m", "v"}, {"y"}, "bn");
  setAttr(bn, "training_mode", int64_t{1});
  EXPECT_NE(importError(b).find("BatchNormalization node 'bn': training_mode=1"), std::string::npos);
}

TEST(OnnxErrors, MissingOpsetIsReported) {
  ModelBuilder b;
  b.model().clear_opset_import();
  b.input("x", {2}).output("y");
  b.node("Relu", {"x"}, {"y"});
  EXPECT_NE(importError(b).find("operator set"), std::string::npos);
}

TEST(OnnxErrors, WrongAttributeTypeNamesTheAttribute) {
  ModelBuilder b;
  b.input("x", {2, 3}).output("y");
  auto& flatten = b.node("Flatten", {"x"}, {"y"}, "f");
  setAttr(flatten, "axis", 1.0f);
  EXPECT_NE(importError(b).find("Flatten node 'f': attribute 'axis' has type FLOAT, expected INT"), std::string::npos);
}

// Regressions found by the onnx_import fuzz target.
TEST(OnnxErrors, OutputNamedLikeAnInputIsRejected) {
  ModelBuilder b;
  b.input("x", {2}).output("x");
  b.node("Relu", {"x"}, {"r"});
  EXPECT_NE(importError(b).find("graph output 'x' repeats the name"), std::string::npos);
}

TEST(OnnxErrors, ConvWithoutOutputIsRejected) {
  ModelBuilder b;
  b.input("x", {1, 1, 3, 3}).output("x2");
  b.initializer("w", {1, 1, 1, 1}, {1});
  b.node("Conv", {"x", "w"}, {}, "conv");
  b.node("Relu", {"x"}, {"x2"});
  EXPECT_NE(importError(b).find("Conv node 'conv': output 0 is missing"), std::string::npos);
}

TEST(OnnxErrors, FoldedOperatorWithMissingInputIsRejected) {
  ModelBuilder b;
  b.input("x", {2}).output("y");
  b.initializerInt64("data", {3}, {1, 2, 3});
  b.node("Gather", {"data"}, {"g"}, "gather");
  b.node("Relu", {"x"}, {"y"});
  EXPECT_NE(importError(b).find("Gather node 'gather': input 1 (indices) is missing"), std::string::npos);
}

TEST(OnnxErrors, PaddingNotSmallerThanTheWindowNamesTheNode) {
  ModelBuilder b;
  b.input("x", {1, 1, 8, 8}).output("y");
  auto& pool = b.node("AveragePool", {"x"}, {"y"}, "pool");
  setAttr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  setAttr(pool, "pads", std::vector<int64_t>{0, 0, 0, 5});
  EXPECT_NE(importError(b).find("AveragePool node 'pool'"), std::string::npos);
}

TEST(OnnxErrors, RandomDropoutIsRejected) {
  ModelBuilder b;
  b.input("x", {2}).output("y");
  b.initializer("ratio", {}, {0.5f});
  auto* training = b.model().mutable_graph()->add_initializer();
  training->set_name("training");
  training->set_data_type(::onnx::TensorProto::BOOL);
  training->add_int32_data(1);
  b.node("Dropout", {"x", "ratio", "training"}, {"y"}, "drop");
  EXPECT_NE(importError(b).find("Dropout node 'drop': training_mode=true"), std::string::npos);
}

// A zero point or scale initializer of an ONNX element type given by hand (the builder writes
// float and int64 ones).
void typedScalar(ModelBuilder& b, const std::string& name, int32_t onnxType, int32_t value) {
  auto* tensor = b.model().mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnxType);
  tensor->add_int32_data(value);
}

TEST(OnnxErrors, QuantizationInputsThatDoNotFitAreNamed) {
  {  // a per-axis scale with one value per element of another axis
    ModelBuilder b;
    b.input("x", {2, 3, 4}).output("y");
    b.initializer("scale", {4}, {0.5f, 0.5f, 0.5f, 0.5f});
    b.node("QuantizeLinear", {"x", "scale"}, {"y"}, "quant");
    const std::string message = importError(b);
    EXPECT_NE(message.find("QuantizeLinear node 'quant'"), std::string::npos) << message;
    EXPECT_NE(message.find("y_scale has 4 values; axis 1 of the input has 3"), std::string::npos) << message;
  }
  {  // per-axis before opset 13
    ModelBuilder b(10);
    b.input("x", {2, 3}).output("y");
    b.initializer("scale", {3}, {0.5f, 0.5f, 0.5f});
    b.node("QuantizeLinear", {"x", "scale"}, {"y"}, "quant");
    const std::string message = importError(b);
    EXPECT_NE(message.find("y_scale must be a scalar before opset 13"), std::string::npos) << message;
  }
  {  // a zero point of another type than the quantized input
    ModelBuilder b;
    b.input("x", {4}, {}, ::onnx::TensorProto::INT8).output("y");
    b.initializer("scale", {}, {0.5f});
    typedScalar(b, "zero", ::onnx::TensorProto::UINT8, 3);
    b.node("DequantizeLinear", {"x", "scale", "zero"}, {"y"}, "dequant");
    const std::string message = importError(b);
    EXPECT_NE(message.find("DequantizeLinear node 'dequant'"), std::string::npos) << message;
    EXPECT_NE(message.find("x_zero_point is uint8; x is int8"), std::string::npos) << message;
  }
  {  // a matrix product's zero point of one value per column of A, not per row
    ModelBuilder b;
    b.input("a", {2, 3}, {}, ::onnx::TensorProto::UINT8).input("b", {3, 4}, {}, ::onnx::TensorProto::UINT8).output("y");
    auto* zero = b.model().mutable_graph()->add_initializer();
    zero->set_name("a_zero");
    zero->set_data_type(::onnx::TensorProto::UINT8);
    zero->add_dims(3);
    for (int v : {1, 2, 3}) zero->add_int32_data(v);
    b.node("MatMulInteger", {"a", "b", "a_zero"}, {"y"}, "product");
    const std::string message = importError(b);
    EXPECT_NE(message.find("MatMulInteger node 'product'"), std::string::npos) << message;
    EXPECT_NE(message.find("a_zero_point must be one value, or one per row of a 2-D a"), std::string::npos) << message;
  }
  {  // quantizing to a type with no saturation range
    ModelBuilder b;
    b.input("x", {4}).output("y");
    b.initializer("scale", {}, {0.5f});
    typedScalar(b, "zero", ::onnx::TensorProto::INT32, 0);
    b.node("QuantizeLinear", {"x", "scale", "zero"}, {"y"}, "quant");
    const std::string message = importError(b);
    EXPECT_NE(message.find("quantizing to int32 is not supported"), std::string::npos) << message;
  }
}

// LRN's size has no default in ONNX: a model without it is refused naming the attribute.
TEST(OnnxErrors, LrnWithoutASizeIsNamed) {
  ModelBuilder b;
  b.input("x", {1, 4, 3, 3}).output("y");
  b.node("LRN", {"x"}, {"y"}, "norm");
  const std::string message = importError(b);
  EXPECT_NE(message.find("LRN node 'norm'"), std::string::npos) << message;
  EXPECT_NE(message.find("size"), std::string::npos) << message;
  EXPECT_NE(message.find("must be at least 1"), std::string::npos) << message;
}

// GridSample: a mode neither opset spells and a grid that does not fit the input are named.
TEST(OnnxErrors, GridSampleModeAndGridAreNamed) {
  {
    ModelBuilder b(16);
    b.input("x", {1, 2, 4, 4}).input("grid", {1, 3, 3, 2}).output("y");
    setAttr(b.node("GridSample", {"x", "grid"}, {"y"}, "warp"), "mode", std::string("area"));
    const std::string message = importError(b);
    EXPECT_NE(message.find("GridSample node 'warp': attribute 'mode'"), std::string::npos) << message;
    EXPECT_NE(message.find("'area'"), std::string::npos) << message;
  }
  {
    ModelBuilder b(16);
    b.input("x", {1, 2, 4, 4}).input("grid", {1, 3, 3, 3}).output("y");
    b.node("GridSample", {"x", "grid"}, {"y"}, "warp");
    const std::string message = importError(b);
    EXPECT_NE(message.find("warp"), std::string::npos) << message;
    EXPECT_NE(message.find("input 'grid': expected [1, o1..o2, 2] for src [1,2,4,4], got [1,3,3,3]"), std::string::npos)
        << message;
  }
}

// Opset 18 to 21 forms the importer takes, refused by name where they do not fit.
TEST(OnnxErrors, NewerOpsetAttributesThatDoNotFitAreNamed) {
  const auto message = [](const std::function<void(ModelBuilder&)>& build) {
    ModelBuilder b(18);
    b.input("x", {1, 6, 4, 4});
    build(b);
    return importError(b);
  };
  const std::string split = message([](ModelBuilder& b) {
    b.output("a").output("b");
    setAttr(b.node("Split", {"x"}, {"a", "b"}, "s"), "num_outputs", int64_t{3});
  });
  EXPECT_NE(split.find("Split node 's': attribute 'num_outputs'"), std::string::npos) << split;
  const std::string groups = message([](ModelBuilder& b) {
    b.initializer("scale", {4}, {1, 1, 1, 1}).initializer("bias", {4}, {0, 0, 0, 0}).output("y");
    setAttr(b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "g"), "num_groups", int64_t{4});
  });
  EXPECT_NE(groups.find("attribute 'num_groups'"), std::string::npos) << groups;
  EXPECT_NE(groups.find("divide the 6 channels"), std::string::npos) << groups;
  const std::string antialias = message([](ModelBuilder& b) {
    b.initializer("scales", {4}, {1, 1, 0.5f, 0.5f}).output("y");
    auto& resize = b.node("Resize", {"x", "", "scales"}, {"y"}, "r");
    setAttr(resize, "mode", std::string("linear"));
    setAttr(resize, "antialias", int64_t{1});
  });
  EXPECT_NE(antialias.find("attribute 'antialias'"), std::string::npos) << antialias;
  const std::string wrap = message([](ModelBuilder& b) {
    b.initializerInt64("pads", {8}, {0, 0, 5, 0, 0, 0, 0, 0}).output("y");
    setAttr(b.node("Pad", {"x", "pads"}, {"y"}, "p"), "mode", std::string("wrap"));
  });
  EXPECT_NE(wrap.find("wrap pads of axis 2 exceed its dim 4"), std::string::npos) << wrap;
}

// Operators composed of other IR ops refuse what they cannot express, naming the node.
TEST(OnnxErrors, ComposedOperatorsNameWhatDoesNotFit) {
  const auto message = [](int opset, const ir::Dims& dims, const std::function<void(ModelBuilder&)>& build) {
    ModelBuilder b(opset);
    b.input("x", dims).output("y");
    build(b);
    return importError(b);
  };
  const std::string diagonal = message(12, {2, 3, 4}, [](ModelBuilder& b) {
    setAttr(b.node("Einsum", {"x"}, {"y"}, "e"), "equation", std::string("bii->bi"));
  });
  EXPECT_NE(diagonal.find("Einsum node 'e': letter 'i' is repeated over axes of sizes 3 and 4"), std::string::npos)
      << diagonal;
  const std::string variance = message(13, {2, 3, 4},
                                       [](ModelBuilder& b) { b.node("MeanVarianceNormalization", {"x"}, {"y"}, "m"); });
  EXPECT_NE(variance.find("MeanVarianceNormalization node 'm': attribute 'axes'"), std::string::npos) << variance;
  EXPECT_NE(variance.find("rank other than 4"), std::string::npos) << variance;
  const std::string shrinking = message(9, {1, 2, 4, 4}, [](ModelBuilder& b) {
    b.initializer("scales", {4}, {1, 1, 0.5f, 2});
    b.node("Upsample", {"x", "scales"}, {"y"}, "u");
  });
  EXPECT_NE(shrinking.find("Upsample node 'u': scales must be >= 1"), std::string::npos) << shrinking;
  const std::string lambd = message(
      9, {2, 3}, [](ModelBuilder& b) { setAttr(b.node("Shrink", {"x"}, {"y"}, "s"), "lambd", -1.0f); });
  EXPECT_NE(lambd.find("Shrink node 's': attribute 'lambd'"), std::string::npos) << lambd;
  const std::string onesided = message(
      17, {1, 8, 2}, [](ModelBuilder& b) { setAttr(b.node("DFT", {"x"}, {"y"}, "d"), "onesided", int64_t{1}); });
  EXPECT_NE(onesided.find("DFT node 'd': attribute 'onesided' is 1 for a complex input"), std::string::npos)
      << onesided;
  const std::string frame = message(17, {1, 8, 1}, [](ModelBuilder& b) {
    b.initializerInt64("step", {}, {2}).initializerInt64("length", {}, {16});
    b.node("STFT", {"x", "step", "", "length"}, {"y"}, "s");
  });
  EXPECT_NE(frame.find("STFT node 's': frame_length 16 exceeds the signal's 8 samples"), std::string::npos) << frame;
  const std::string huge = message(17, {1, 8192, 2}, [](ModelBuilder& b) { b.node("DFT", {"x"}, {"y"}, "d"); });
  EXPECT_NE(huge.find("DFT node 'd': a transform of 8192 samples into 8192 bins needs a matrix of 1024 MB; at most 64 "
                      "MB is supported"),
            std::string::npos)
      << huge;
  const std::string window = message(17, {1, 8, 1}, [](ModelBuilder& b) {
    b.initializerInt64("size", {}, {0});
    b.node("HannWindow", {"size"}, {"y"}, "w");
  });
  EXPECT_NE(window.find("HannWindow node 'w': input 'size' must hold one value from 1 to 65536"), std::string::npos)
      << window;
}

// Dropout's mask output is folded to a constant of ones; a huge input is refused by the bytes
// the mask would take, before anything is allocated (fuzz_onnx_import ran out of memory on it:
// the ones were first listed as int64, eight bytes each).
TEST(OnnxErrors, HugeDropoutMaskIsRefusedBeforeAllocating) {
  for (const int opset : {9, 13}) {
    ModelBuilder b(opset);
    b.input("x", {1 << 15, 1 << 15}).output("y").output("mask");
    if (opset >= 10)
      b.model().mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
          ::onnx::TensorProto::BOOL);
    b.node("Dropout", {"x"}, {"y", "mask"}, "drop");
    const std::string message = importError(b);
    EXPECT_NE(message.find("Dropout node 'drop'"), std::string::npos) << message;
    EXPECT_NE(message.find("the mask output would exceed 268435456 bytes"), std::string::npos) << message;
  }
}

}  // namespace
// A node naming more outputs than its operator has, with constant inputs (so evaluated at import
// time, which reads every output): found by fuzz_onnx_import, whose input it was.
TEST(OnnxErrors, ExtraOutputOfAConstantNodeIsNamed) {
  for (const bool shapeArithmetic : {true, false}) {
    ModelBuilder b;
    b.input("x", {4}).output("y");
    if (shapeArithmetic) {
      b.initializerInt64("data", {4}, {1, 2, 3, 4});
    } else {
      b.initializer("data", {4}, {1, 2, 3, 4});
    }
    b.initializerInt64("indices", {4}, {3, 2, 1, 0});
    b.node("Gather", {"data", "indices"}, {"g", "extra"}, "gather");
    if (shapeArithmetic) {
      setAttr(b.node("Cast", {"g"}, {"gf"}), "to", int64_t{::onnx::TensorProto::FLOAT});
      b.node("Add", {"x", "gf"}, {"y"});
    } else {
      b.node("Add", {"x", "g"}, {"y"});
    }
    const std::string message = importError(b);
    EXPECT_NE(message.find("output 1 ('extra') is not supported"), std::string::npos) << message;
    EXPECT_NE(message.find("gather"), std::string::npos) << message;
  }
}

}  // namespace qaic::onnx::test
