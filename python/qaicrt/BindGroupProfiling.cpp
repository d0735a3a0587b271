// SPDX-License-Identifier: Apache-2.0
// InferenceSetGroup (over-subscription), ProfilingHandle (num-iter latency profiling) and Util
// (device discovery and status).
#include <pybind11/stl.h>

#include "Common.hpp"

namespace qaicrt {
namespace {

struct PyProfiling {
  std::shared_ptr<rt::ProfilingHandle> handle;
  ~PyProfiling() {
    withoutGil([&] { handle.reset(); });
  }
};

std::shared_ptr<PyGroup> makeGroup(const std::string& name) {
  auto group = std::make_shared<PyGroup>();
  withoutGil([&] { group->group = rt::InferenceSetGroup::Factory(name); });
  return group;
}

std::unique_ptr<PyProfiling> makeProfiling(const std::shared_ptr<SetState>& set, uint32_t numSamples,
                                           const py::object& callback, const py::object& userData,
                                           rt::ProfilingType type) {
  if (!set) raiseStatus(rt::QS_INVAL, "ProfilingHandle: set is None");
  rt::ProfilingCallback deliver;
  if (!callback.is_none()) {
    auto function = shareObject(callback), data = shareObject(userData);
    deliver = [function, data](const rt::ProfilingReport& report, void*) {
      callPython("qaicrt: ProfilingHandle callback", [&] { (*function)(report, *data); });
    };
  }
  auto profiling = std::make_unique<PyProfiling>();
  withoutGil([&] { profiling->handle = rt::ProfilingHandle::Factory(set->set, numSamples, deliver, nullptr, type); });
  return profiling;
}

template <typename Struct, typename Field>
void field(py::class_<Struct>& c, const char* name, Field Struct::*member) {
  c.def_readonly(name, member);
}

}  // namespace

PyGroup::~PyGroup() {
  withoutGil([&] { group.reset(); });
}

void bindGroupAndProfiling(py::module_& m) {
  py::class_<PyGroup, std::shared_ptr<PyGroup>>(m, "InferenceSetGroup", R"doc(
Over-subscription (seed 001): InferenceSets created with the same group (properties.inferenceSetGroup)
share one set of NSPs, one active at a time; each member has numActivations 1 and the same
device. InferenceSetGroup(name="") or InferenceSetGroup.Factory(name): a non-empty name returns
the group registered under it; release() unregisters it.
)doc")
      .def(py::init(&makeGroup), py::arg("name") = "")
      .def_static("Factory", &makeGroup, py::arg("name") = "")
      .def(
          "enable", [](PyGroup& g) { withoutGil([&] { g.group->enable(); }); }, "Loads every member and activates one.")
      .def(
          "disable", [](PyGroup& g) { withoutGil([&] { g.group->disable(); }); },
          "Waits for inferences in flight, then deactivates.")
      .def("release", [](PyGroup& g) { withoutGil([&] { g.group->release(); }); })
      .def("isEnabled", [](const PyGroup& g) { return withoutGil([&] { return g.group->isEnabled(); }); })
      .def("getName", [](const PyGroup& g) { return g.group->getName(); });

  py::class_<rt::ProfilingSample>(m, "ProfilingSample")
      .def_readonly("requestId", &rt::ProfilingSample::requestId)
      .def_readonly("status", &rt::ProfilingSample::status)
      .def_readonly("stages", &rt::ProfilingSample::stages, "Stage name -> PerfCounter.");
  py::class_<rt::ProfilingReport>(m, "ProfilingReport")
      .def_readonly("type", &rt::ProfilingReport::type)
      .def_readonly("setName", &rt::ProfilingReport::setName)
      .def_readonly("samples", &rt::ProfilingReport::samples)
      .def_readonly("meanUs", &rt::ProfilingReport::meanUs, "Stage name -> mean microseconds over the samples.");
  py::class_<PyProfiling>(m, "ProfilingHandle", R"doc(
Num-iter latency profiling (seed 001): ProfilingHandle(set, numSamples, callback, userData=None,
type=PROFILING_TYPE_LATENCY). start() collects the stage durations of up to numSamples
completions of `set`; stop() calls callback(report: ProfilingReport, userData) on the calling
thread, unless nothing completed in between.
)doc")
      .def(py::init(&makeProfiling), py::arg("set"), py::arg("numSamples"), py::arg("callback"),
           py::arg("userData") = py::none(), py::arg("type") = rt::PROFILING_TYPE_LATENCY)
      .def_static("Factory", &makeProfiling, py::arg("set"), py::arg("numSamples"), py::arg("callback"),
                  py::arg("userData") = py::none(), py::arg("type") = rt::PROFILING_TYPE_LATENCY)
      .def("start", [](PyProfiling& p) { withoutGil([&] { p.handle->start(); }); })
      .def("stop", [](PyProfiling& p) { withoutGil([&] { p.handle->stop(); }); });
}

void bindUtil(py::module_& m) {
  py::class_<rt::QDevPartitionInfo> partition(m, "QDevPartitionInfo", "Where a partition comes from.");
  field(partition, "parent", &rt::QDevPartitionInfo::parent);
  field(partition, "ownerUid", &rt::QDevPartitionInfo::ownerUid);
  field(partition, "ownerGid", &rt::QDevPartitionInfo::ownerGid);
  field(partition, "mode", &rt::QDevPartitionInfo::mode);
  field(partition, "holderPid", &rt::QDevPartitionInfo::holderPid);
  field(partition, "label", &rt::QDevPartitionInfo::label);

  py::class_<rt::QDevInfo> info(m, "QDevInfo", "What qaic-util -q reports about a device.");
#define QAICRT_FIELD(name) field(info, #name, &rt::QDevInfo::name)
  QAICRT_FIELD(id);
  QAICRT_FIELD(status);
  QAICRT_FIELD(pciAddress);
  QAICRT_FIELD(hwVersion);
  QAICRT_FIELD(fwVersion);
  QAICRT_FIELD(sku);
  QAICRT_FIELD(dramTotalMb);
  QAICRT_FIELD(dramFreeMb);
  QAICRT_FIELD(vcTotal);
  QAICRT_FIELD(vcFree);
  QAICRT_FIELD(nspTotal);
  QAICRT_FIELD(nspFree);
  QAICRT_FIELD(mcidTotal);
  QAICRT_FIELD(mcidFree);
  QAICRT_FIELD(semTotal);
  QAICRT_FIELD(semFree);
  QAICRT_FIELD(constantsLoaded);
  QAICRT_FIELD(constantsInUse);
  QAICRT_FIELD(networksLoaded);
  QAICRT_FIELD(networksActive);
  QAICRT_FIELD(nspFrequencyMhz);
  QAICRT_FIELD(pciVendor);
  QAICRT_FIELD(pciDevice);
  QAICRT_FIELD(hwSerial);
  QAICRT_FIELD(boardSerial);
  QAICRT_FIELD(fwQcImageVersion);
  QAICRT_FIELD(fwOemImageVersion);
  QAICRT_FIELD(fwImageVariant);
  QAICRT_FIELD(nspVersion);
  QAICRT_FIELD(nspQcImageVersion);
  QAICRT_FIELD(nspImageVariant);
  QAICRT_FIELD(deviceCapabilities);
  QAICRT_FIELD(ddrFrequencyMhz);
  QAICRT_FIELD(maxLinkSpeed);
  QAICRT_FIELD(maxLinkWidth);
  QAICRT_FIELD(currentLinkSpeed);
  QAICRT_FIELD(currentLinkWidth);
  QAICRT_FIELD(socTemperatureC);
  QAICRT_FIELD(boardPowerW);
  QAICRT_FIELD(tdpCapW);
  QAICRT_FIELD(dbcStates);
  QAICRT_FIELD(partition);
#undef QAICRT_FIELD
  info.def("__repr__", [](const rt::QDevInfo& d) {
    return "QDevInfo(id=" + std::to_string(d.id) + ", status='" + d.status + "', nspFree=" + std::to_string(d.nspFree) +
           "/" + std::to_string(d.nspTotal) + ")";
  });

  py::class_<rt::Util>(m, "Util", R"doc(
Devices under $QAIC_ROOT: Util.getDeviceIds() lists them (partitions included) and
Util.getDeviceInfo(id) reads what qaic-util -q prints (a missing device raises qaicrt.Error
with status QS_NODEV). Util() instances work too.
)doc")
      .def(py::init<>())
      .def_static("getDeviceIds", [] { return withoutGil([] { return rt::Util::getDeviceIds(); }); })
      .def_static(
          "getDeviceInfo", [](rt::QID device) { return withoutGil([&] { return rt::Util::getDeviceInfo(device); }); },
          py::arg("device"));
}

}  // namespace qaicrt
