// SPDX-License-Identifier: Apache-2.0
// The vendor's lower-level runtime classes (Program, ExecObj, Queue and their helpers), as code
// written for the card calls them (efficient-transformers' QAICInferenceSession), built on the
// public InferenceSet API like the rest of the module. Their calls return a QStatus rather than
// raising, as the vendor's do; the reason of a failure goes to stderr and to getErrorMessage().
//
// A Program's activation is an InferenceSet of one activation with kExecSlots handles; each
// ExecObj holds one handle of it (one inference slot) and gives the runtime output memory of its
// own. The bindings are those of the vendor IO descriptor (Qpc::getVendorIoBindings()): retained
// ones live on the device, so an ExecObj takes size-0 buffers for them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "Common.hpp"

namespace qaicrt {

// The handles of an activation: how many ExecObjs of one Program may exist at once.
inline constexpr uint32_t kExecSlots = 8;

// One activation of a Program; ExecObjs share it, so the set goes with the last of them.
struct Activation {
  std::shared_ptr<rt::InferenceSet> set;
  bool live = true;  // false once its Program deactivated it (GIL guarded)
  ~Activation();     // releases the set without the GIL
};

struct PyProgram {
  std::shared_ptr<rt::Context> context;
  std::shared_ptr<rt::Qpc> qpc;
  rt::QID device = 0;
  rt::ProgramProperties properties;
  bool loaded = false;
  std::shared_ptr<Activation> activation;  // set while active
  std::string lastError;
};

// Reports a failed vendor-style call: remembered for getErrorMessage() and written to stderr.
rt::QStatus reportFailure(std::string& lastError, rt::QStatus status, const std::string& message);

void bindProgram(py::module_& m);
// ExecObj; Queue.enqueue calls enqueueExecObj.
void bindExecObj(py::module_& m);
rt::QStatus enqueueExecObj(const py::object& execObj);

}  // namespace qaicrt
