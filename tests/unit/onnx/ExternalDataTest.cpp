// SPDX-License-Identifier: Apache-2.0
// Tensors in external data files (how ONNX stores a model over 2 GiB, and how exporters save
// large weights): read from the model's directory, each byte range checked against the dims,
// and every bad reference named.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ModelBuilder.hpp"

namespace qaic::onnx::test {
namespace {

namespace fs = std::filesystem;

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("onnx-external-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // y = x * w, w [4] = {1.5, -2, 3, 0.25} stored at `offset` of data.bin; `edit` may change the
  // reference before the model is written.
  std::string writeModel(uint64_t offset, const std::function<void(::onnx::TensorProto&)>& edit = {}) {
    const float weights[] = {1.5f, -2, 3, 0.25f};
    std::string data(offset, 'x');
    data.append(reinterpret_cast<const char*>(weights), sizeof weights);
    std::ofstream(dir_ / "data.bin", std::ios::binary) << data;
    ModelBuilder b;
    b.input("x", {4}).initializer("w", {4}, {0, 0, 0, 0}).output("y");
    b.node("Mul", {"x", "w"}, {"y"});
    ::onnx::TensorProto& w = *b.model().mutable_graph()->mutable_initializer(0);
    w.clear_float_data();
    w.clear_raw_data();
    w.set_data_location(::onnx::TensorProto::EXTERNAL);
    const auto add = [&](const std::string& key, const std::string& value) {
      auto* entry = w.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", "data.bin");
    add("offset", std::to_string(offset));
    add("length", "16");
    if (edit) edit(w);
    const std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << b.bytes();
    return path;
  }

  static std::string importFailure(const std::string& path) {
    try {
      importOnnxFile(path);
    } catch (const ImportError& e) {
      return e.what();
    }
    return "";
  }

  static void setValue(::onnx::TensorProto& w, const std::string& key, const std::string& value) {
    for (auto& entry : *w.mutable_external_data()) {
      if (entry.key() == key) entry.set_value(value);
    }
  }

  fs::path dir_;
};

TEST_F(ExternalData, WeightsAreReadFromTheModelsDirectory) {
  const ImportedModel m = importOnnxFile(writeModel(4096));
  ASSERT_EQ(m.weights.size(), 1u);
  std::vector<float> w(4);
  ASSERT_EQ(m.weights[0].data.size(), sizeof(float) * 4);
  std::memcpy(w.data(), m.weights[0].data.data(), sizeof(float) * 4);
  EXPECT_EQ(w, (std::vector<float>{1.5f, -2, 3, 0.25f}));
}

// The bytes of `path`'s mappings in this process, from /proc/self/maps: [begin, end) ranges.
std::vector<std::pair<uintptr_t, uintptr_t>> mappingsOf(const fs::path& path) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  std::ifstream maps("/proc/self/maps");
  const std::string name = fs::canonical(path).string();
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < name.size() || line.compare(line.size() - name.size(), name.size(), name) != 0) continue;
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2) ranges.emplace_back(begin, end);
  }
  return ranges;
}

TEST_F(ExternalData, WeightsAreAViewOfTheMappedFileNotACopy) {
  const ImportedModel m = importOnnxFile(writeModel(4096));
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_TRUE(m.weights[0].data.isView());
  const auto at = reinterpret_cast<uintptr_t>(m.weights[0].data.data());
  const auto ranges = mappingsOf(dir_ / "data.bin");
  ASSERT_FALSE(ranges.empty()) << "data.bin is not mapped";
  bool inside = false;
  for (const auto& [begin, end] : ranges) inside = inside || (at >= begin && at + 16 <= end);
  EXPECT_TRUE(inside) << "the weight's bytes are not in data.bin's mapping";
  // The views handed to the compiler are the same bytes, and the copy of a tensor shares them.
  EXPECT_EQ(weightTensors(m)[0].data.data(), m.weights[0].data.data());
  const ImportedTensor copy = m.weights[0];
  EXPECT_EQ(copy.data.data(), m.weights[0].data.data());
}

TEST_F(ExternalData, BadReferencesAreNamed) {
  const std::pair<std::function<void(::onnx::TensorProto&)>, std::string> cases[] = {
      {[](auto& w) { setValue(w, "location", "absent.bin"); }, "external data file '"},
      {[](auto& w) { setValue(w, "location", "../data.bin"); }, "location '../data.bin' leaves the model's directory"},
      {[](auto& w) { setValue(w, "location", "/etc/passwd"); }, "location '/etc/passwd' leaves the model's directory"},
      {[](auto& w) { setValue(w, "length", "12"); }, "external data length 12 but dims need 16 bytes"},
      {[](auto& w) { setValue(w, "offset", "4100"); }, "holds 4112 bytes; the tensor needs 16 from offset 4100"},
      {[](auto& w) { setValue(w, "offset", "-1"); }, "external data offset '-1' is not a byte count"},
      {[](auto& w) {
         auto* entry = w.add_external_data();
         entry->set_key("basepath");
         entry->set_value("x");
       },
       "external data key 'basepath' is not one of location, offset, length"},
  };
  for (const auto& [edit, expected] : cases) {
    const std::string message = importFailure(writeModel(4096, [&](auto& w) { edit(w); }));
    EXPECT_NE(message.find("initializer 'w': "), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  EXPECT_NE(importFailure(writeModel(4096, [](auto& w) { setValue(w, "location", "absent.bin"); }))
                .find("No such file or directory"),
            std::string::npos);
}

TEST_F(ExternalData, ModelBytesWithoutADirectoryRefuseIt) {
  const std::string path = writeModel(0);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    importOnnxBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), {}, "memory.onnx");
    FAIL() << "read external data without a directory";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("external data can only be read from a model file's directory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qaic::onnx::test
