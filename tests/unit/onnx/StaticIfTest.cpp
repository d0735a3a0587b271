// SPDX-License-Identifier: Apache-2.0
// An If whose condition is known at import time (PyTorch's tests on static shapes) is the branch
// it selects; one whose condition is known only at run time is refused by name.
#include <gtest/gtest.h>

#include "IrGraphs.hpp"
#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

namespace pb = ::onnx;

// y = If(x.shape[0] == `rows`) then Relu(x) else Neg(x); the branches read x from the outer graph.
void shapeTest(ModelBuilder& b, int64_t rows) {
  b.input("x", {2, 3}).output("y");
  b.initializerInt64("zero", {}, {0}).initializerInt64("rows", {}, {rows});
  b.node("Shape", {"x"}, {"shape"});
  b.node("Gather", {"shape", "zero"}, {"first"});
  b.node("Equal", {"first", "rows"}, {"cond"});
  pb::NodeProto& branch = b.node("If", {"cond"}, {"y"}, "rank_test");
  for (const auto& [name, op] : {std::pair{"then_branch", "Relu"}, std::pair{"else_branch", "Neg"}}) {
    auto* attribute = branch.add_attribute();
    attribute->set_name(name);
    attribute->set_type(pb::AttributeProto::GRAPH);
    pb::GraphProto& g = *attribute->mutable_g();
    g.set_name(name);
    auto* n = g.add_node();
    n->set_op_type(op);
    n->add_input("x");
    n->add_output(std::string(name) + "_out");
    g.add_output()->set_name(std::string(name) + "_out");
  }
}

TEST(OnnxStaticIf, AConditionOnStaticShapesSelectsItsBranch) {
  ModelBuilder taken;
  shapeTest(taken, 2);
  const ImportedModel then = taken.import();
  EXPECT_EQ(countOps(then.graph, "relu"), 1u);
  EXPECT_EQ(countOps(then.graph, "unary"), 0u);
  ASSERT_EQ(then.graph.io.size(), 2u);
  EXPECT_EQ(then.graph.io[1].bufferName, "y");
  EXPECT_EQ(then.graph.io[1].dims, (ir::Dims{2, 3}));

  ModelBuilder other;
  shapeTest(other, 5);
  const ImportedModel otherwise = other.import();
  EXPECT_EQ(countOps(otherwise.graph, "relu"), 0u);
  ASSERT_EQ(countOps(otherwise.graph, "unary"), 1u);
  EXPECT_EQ(findOp(otherwise.graph, "unary")->string("func"), "neg");
}

TEST(OnnxStaticIf, AConditionKnownOnlyAtRunTimeIsRefusedByName) {
  ModelBuilder b;
  b.input("x", {2, 3}).input("flag", {1}, {}, pb::TensorProto::BOOL).output("y");
  pb::NodeProto& branch = b.node("If", {"flag"}, {"y"}, "choice");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* attribute = branch.add_attribute();
    attribute->set_name(name);
    attribute->set_type(pb::AttributeProto::GRAPH);
    auto* n = attribute->mutable_g()->add_node();
    n->set_op_type("Relu");
    n->add_input("x");
    n->add_output(std::string(name) + "_out");
    attribute->mutable_g()->add_output()->set_name(std::string(name) + "_out");
  }
  const std::string error = importError(b);
  EXPECT_NE(error.find("If node 'choice': its condition is known only at run time"), std::string::npos) << error;
}

}  // namespace
}  // namespace qaic::onnx::test
