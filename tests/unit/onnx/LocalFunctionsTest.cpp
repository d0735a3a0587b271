// SPDX-License-Identifier: Apache-2.0
// Model-local functions (torch.onnx.export's export_modules_as_functions, onnxscript operators of
// other domains): every call is replaced by the function's body before conversion.
#include <gtest/gtest.h>

#include "IrGraphs.hpp"
#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

namespace pb = ::onnx;

// Y = LeakyRelu(Neg(X)) with LeakyRelu's alpha taken from the call's attribute `slope`.
pb::FunctionProto& negatedLeakyRelu(ModelBuilder& b) {
  pb::FunctionProto& f = *b.model().add_functions();
  f.set_name("NegatedLeakyRelu");
  f.set_domain("com.example");
  f.add_input("X");
  f.add_output("Y");
  f.add_attribute("slope");
  auto* neg = f.add_node();
  neg->set_op_type("Neg");
  neg->add_input("X");
  neg->add_output("t");
  auto* leaky = f.add_node();
  leaky->set_op_type("LeakyRelu");
  leaky->add_input("t");
  leaky->add_output("Y");
  auto* alpha = leaky->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(pb::AttributeProto::FLOAT);
  alpha->set_ref_attr_name("slope");
  return f;
}

pb::NodeProto& call(ModelBuilder& b, const std::string& function, const std::string& in, const std::string& out,
                    const std::string& name) {
  pb::NodeProto& n = b.node(function, {in}, {out}, name);
  n.set_domain("com.example");
  return n;
}

TEST(OnnxLocalFunctions, EachCallBecomesTheBodyWithTheCallsAttributes) {
  ModelBuilder b;
  auto* domain = b.model().add_opset_import();
  domain->set_domain("com.example");
  domain->set_version(1);
  negatedLeakyRelu(b);
  b.input("x", {2, 3}).output("y");
  setAttr(call(b, "NegatedLeakyRelu", "x", "h", "first"), "slope", 0.25f);
  setAttr(call(b, "NegatedLeakyRelu", "h", "y", "second"), "slope", 0.5f);

  const ImportedModel m = b.import();
  EXPECT_EQ(countOps(m.graph, "unary"), 2u);
  ASSERT_EQ(countOps(m.graph, "lrelu"), 2u);
  EXPECT_EQ(findOp(m.graph, "lrelu", 0)->number("negslope"), 0.25);
  EXPECT_EQ(findOp(m.graph, "lrelu", 1)->number("negslope"), 0.5);
  ASSERT_EQ(m.graph.io.size(), 2u);
  EXPECT_EQ(m.graph.io[1].bufferName, "y");
  EXPECT_EQ(m.graph.io[1].dims, (ir::Dims{2, 3}));
}

// A function whose body calls another function is expanded level by level.
TEST(OnnxLocalFunctions, CallsInsideABodyAreExpandedToo) {
  ModelBuilder b;
  negatedLeakyRelu(b);
  pb::FunctionProto& outer = *b.model().add_functions();
  outer.set_name("Twice");
  outer.set_domain("com.example");
  outer.add_input("A");
  outer.add_output("B");
  for (const auto& [in, out] : {std::pair{"A", "mid"}, std::pair{"mid", "B"}}) {
    auto* n = outer.add_node();
    n->set_op_type("NegatedLeakyRelu");
    n->set_domain("com.example");
    n->add_input(in);
    n->add_output(out);
  }
  b.input("x", {4}).output("y");
  call(b, "Twice", "x", "y", "");
  const ImportedModel m = b.import();
  EXPECT_EQ(countOps(m.graph, "lrelu"), 2u);
  EXPECT_EQ(countOps(m.graph, "unary"), 2u);
}

TEST(OnnxLocalFunctions, AFunctionThatCallsItselfIsAnErrorNamingIt) {
  ModelBuilder b;
  pb::FunctionProto& f = *b.model().add_functions();
  f.set_name("Forever");
  f.set_domain("com.example");
  f.add_input("X");
  f.add_output("Y");
  auto* self = f.add_node();
  self->set_op_type("Forever");
  self->set_domain("com.example");
  self->add_input("X");
  self->add_output("Y");
  b.input("x", {4}).output("y");
  call(b, "Forever", "x", "y", "loop");
  const std::string error = importError(b);
  EXPECT_NE(error.find("test.onnx: model-local function com.example::Forever: calls nested deeper"), std::string::npos)
      << error;
}

// Each level calls the next twice: 2^30 nodes if expanded, refused at the node budget instead.
TEST(OnnxLocalFunctions, AnExpansionThatDoublesPerLevelStopsAtTheNodeBudget) {
  ModelBuilder b;
  for (int level = 0; level < 30; ++level) {
    pb::FunctionProto& f = *b.model().add_functions();
    f.set_name("Level" + std::to_string(level));
    f.set_domain("com.example");
    f.add_input("X");
    f.add_output("Y");
    for (const auto& [in, out] : {std::pair{"X", "mid"}, std::pair{"mid", "Y"}}) {
      auto* n = f.add_node();
      n->set_op_type(level == 29 ? "Relu" : "Level" + std::to_string(level + 1));
      if (level < 29) n->set_domain("com.example");
      n->add_input(in);
      n->add_output(out);
    }
  }
  b.input("x", {4}).output("y");
  call(b, "Level0", "x", "y", "top");
  const std::string error = importError(b);
  EXPECT_NE(error.find("model-local functions expand to more than 131072 nodes"), std::string::npos) << error;
}

TEST(OnnxLocalFunctions, ACallWithMoreInputsThanTheFunctionTakesIsAnError) {
  ModelBuilder b;
  negatedLeakyRelu(b);
  b.input("x", {4}).input("z", {4}).output("y");
  pb::NodeProto& n = b.node("NegatedLeakyRelu", {"x", "z"}, {"y"}, "wide");
  n.set_domain("com.example");
  const std::string error = importError(b);
  EXPECT_NE(error.find("node 'wide' passes 2 inputs to model-local function "
                       "com.example::NegatedLeakyRelu, which takes 1"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace qaic::onnx::test
