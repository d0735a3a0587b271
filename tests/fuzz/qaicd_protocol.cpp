// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as one qaicd request line (and as a response line, which
// clients parse). parseRequest must return a Request or an EINVAL ProtocolError naming a field,
// never throw or crash; an accepted request must survive requestLine and parse to the same
// request; every error must render as a response line the client-side reader accepts.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "qaicd/Protocol.hpp"

namespace {

using namespace qaic::qaicd;

nlohmann::json fieldsOf(const Request& r) {
  nlohmann::json fields = nlohmann::json::object();
  switch (r.op) {
    case Op::Hello: fields["version"] = r.version; break;
    case Op::Devices:
    case Op::List: break;
    case Op::Create:
      fields = toJson(r.resources);
      if (r.device) fields["device"] = *r.device;
      if (!r.label.empty()) fields["label"] = r.label;
      break;
    case Op::Release:
    case Op::Adopt: fields["partition"] = r.partition; break;
  }
  return fields;
}

bool same(const Request& a, const Request& b) {
  return a.id == b.id && a.op == b.op && a.version == b.version && a.device == b.device && a.resources == b.resources &&
         a.label == b.label && a.partition == b.partition;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  auto parsed = parseRequest(line);
  if (auto* error = std::get_if<ProtocolError>(&parsed)) {
    if (error->errnum != EINVAL || error->message.empty()) std::abort();
    const std::string answer = errorLine(*error);
    auto back = parseResponse(std::string_view(answer).substr(0, answer.size() - 1));
    if (!std::holds_alternative<Response>(back) || std::get<Response>(back).ok) std::abort();
  } else {
    const Request& request = std::get<Request>(parsed);
    const std::string again = requestLine(request.id, request.op, fieldsOf(request));
    auto reparsed = parseRequest(std::string_view(again).substr(0, again.size() - 1));
    if (!std::holds_alternative<Request>(reparsed) || !same(std::get<Request>(reparsed), request)) std::abort();
  }
  // The client side: any bytes as a response, and the readers of its shapes.
  auto response = parseResponse(line);
  if (auto* r = std::get_if<Response>(&response); r != nullptr && r->ok) {
    for (const char* key : {"partition", "devices", "partitions"})
      if (auto it = r->body.find(key); it != r->body.end()) {
        (void)partitionFromJson(*it);
        if (it->is_array())
          for (const auto& element : *it) {
            (void)deviceFromJson(element);
            (void)partitionFromJson(element);
          }
      }
    (void)helloFromJson(r->body);
  }
  return 0;
}
