// SPDX-License-Identifier: Apache-2.0
// A program written against libdrm and the qaic uAPI alone, as a user of the mainline driver
// writes one: it opens the node, checks with drmGetVersion that the driver is qaic, loads and
// activates a program with MANAGE, and runs one inference whose four buffers are memfds
// imported with drmPrimeFDToHandle (the device reads and writes the memfds' pages: no copy on
// the host), submitted with EXECUTE_BO and waited for with WAIT_BO through drmIoctl; the
// handles go with drmCloseBufferHandle.
//   qaic_libdrm_client <accel node> <programqpc.bin>
// Prints what it did and "relu ok" on stdout; exit 0 on success, 1 on a failed call (named on
// stderr), 2 on wrong arguments or a node of another driver.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <xf86drm.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ContainerFiles.hpp"
#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace {

using namespace qaic;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "qaic_libdrm_client: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

// One buffer of the inference: a sealed memfd, mapped here, imported into the device.
struct Buffer {
  int fd = -1;
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  uint32_t handle = 0;
  uint32_t dir = 0;
  qaic_attach_slice_entry slice{};
};

Buffer importedMemfd(int node, std::size_t bytes, uint32_t dir, uint64_t deviceAddress) {
  Buffer b;
  b.bytes = bytes;
  b.dir = dir;
  b.fd = memfd_create("qaic-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (b.fd < 0 || ftruncate(b.fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(b.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
    fail("memfd");
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd, 0);
  if (mapped == MAP_FAILED) fail("mmap memfd");
  b.data = static_cast<std::byte*>(mapped);
  if (drmPrimeFDToHandle(node, b.fd, &b.handle) != 0) fail("drmPrimeFDToHandle");
  b.slice.size = bytes;
  b.slice.dev_addr = deviceAddress;
  return b;
}

// An emulated device reads this process's memory for embedded pointers: under Yama's
// ptrace_scope 1 it must be declared (docs/driver.md). A real device has no qaic-emu/pid.
void declareEmulator(const std::filesystem::path& node) {
  const auto root = node.parent_path().parent_path().parent_path();
  std::ifstream pidFile(root / "sys/class/accel" / node.filename() / qaic::driver::sysfs::kEmuPid);
  long pid = 0;
  if (pidFile >> pid && pid > 0) (void)prctl(PR_SET_PTRACER, pid, 0, 0, 0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: qaic_libdrm_client <accel node> <programqpc.bin>\n");
    return 2;
  }
  const int node = open(argv[1], O_RDWR | O_CLOEXEC);
  if (node < 0) fail(std::string("open ") + argv[1]);
  drmVersionPtr version = drmGetVersion(node);
  if (version == nullptr) fail("drmGetVersion");
  if (std::string(version->name, version->name_len) != "qaic") {
    std::fprintf(stderr, "qaic_libdrm_client: %s is driven by '%s', not qaic\n", argv[1], version->name);
    return 2;
  }
  std::printf("driver %s %d.%d.%d (%s)\n", version->name, version->version_major, version->version_minor,
              version->version_patchlevel, version->desc);
  drmFreeVersion(version);
  if (char* busid = drmGetBusid(node)) {
    std::printf("bus id %s\n", busid);
    drmFreeBusid(busid);
  }
  declareEmulator(argv[1]);

  std::ifstream file(argv[2], std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (chars.empty()) fail(std::string("read ") + argv[2]);
  std::vector<std::byte> qpc(chars.size());
  std::memcpy(qpc.data(), chars.data(), chars.size());
  auto image = container::QpcImage::fromBytes(qpc, argv[2]);
  const container::QpcProgram& program = image->programs().at(0);

  // MANAGE: the container as load 1, then its program 0 activated on a 16-element ring.
  alignas(8) std::byte message[QAIC_MANAGE_MAX_MSG_LENGTH] = {};
  qaic_manage_trans_dma_xfer load{};
  load.hdr = {QAIC_TRANS_DMA_XFER_FROM_USR, sizeof load};
  load.tag = 1;
  load.addr = reinterpret_cast<uintptr_t>(qpc.data());
  load.size = qpc.size();
  qaic_manage_trans_activate_to_dev activate{};
  activate.hdr = {QAIC_TRANS_ACTIVATE_FROM_USR, sizeof activate};
  activate.queue_size = 16;
  activate.options = driver::makeActivateOptions(1, 0);
  std::memcpy(message, &load, sizeof load);
  std::memcpy(message + sizeof load, &activate, sizeof activate);
  qaic_manage_msg manage{sizeof load + sizeof activate, 2, reinterpret_cast<uintptr_t>(message)};
  if (drmIoctl(node, DRM_IOCTL_QAIC_MANAGE, &manage) != 0) fail("MANAGE load and activate");
  qaic_manage_trans_activate_from_dev activated{};
  std::memcpy(&activated, message, sizeof activated);
  if (manage.count != 1 || activated.hdr.type != QAIC_TRANS_ACTIVATE_FROM_DEV || activated.status != 0) {
    errno = EPROTO;
    fail("MANAGE answer");
  }
  const uint32_t dbc = activated.dbc_id;
  std::printf("activated on DBC %u\n", dbc);

  // Request descriptor, x, y, response descriptor, in ring order.
  const auto& x = image->buffers().at(0);
  const auto& y = image->buffers().at(1);
  std::vector<Buffer> buffers;
  buffers.push_back(importedMemfd(node, driver::kDescriptorBytes, QAIC_DIR_TO_DEVICE, program.requestDescriptorOffset));
  buffers.push_back(importedMemfd(node, x.deviceSize, QAIC_DIR_TO_DEVICE, x.deviceOffset));
  buffers.push_back(importedMemfd(node, y.deviceSize, QAIC_DIR_FROM_DEVICE, y.deviceOffset));
  buffers.push_back(
      importedMemfd(node, driver::kDescriptorBytes, QAIC_DIR_FROM_DEVICE, program.responseDescriptorOffset));
  buffers[1].slice.db_addr = program.doorbellAddress;  // the input starts the program
  buffers[1].slice.db_len = 32;
  buffers[1].slice.db_data = 1;
  const auto done = static_cast<uint8_t>(program.doneSemaphore);
  buffers[2].slice.sem0 = {0, done, 1, QAIC_SEM_WAIT_GT_0, 0, 0};  // the output waits for it
  buffers[3].slice.sem1 = {1, done, 0, QAIC_SEM_DEC, 0, 0};        // and takes it back
  for (Buffer& b : buffers) {
    qaic_attach_slice attach{};
    attach.hdr = {1, dbc, b.handle, b.dir, b.bytes};
    attach.data = reinterpret_cast<uintptr_t>(&b.slice);
    if (drmIoctl(node, DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &attach) != 0) fail("ATTACH_SLICE_BO");
  }

  driver::RequestDescriptorHeader header{driver::kRequestDescriptorMagic, driver::kDescriptorVersion, 2, 1};
  std::memcpy(buffers[0].data, &header, sizeof header);
  for (std::size_t i = 0; i < 2; ++i) {
    driver::RequestDescriptorEntry e{1, 2, {1, static_cast<uint32_t>(x.io.dims.at(1))}};
    std::memcpy(buffers[0].data + sizeof header + i * sizeof e, &e, sizeof e);
  }
  const std::size_t elements = static_cast<std::size_t>(x.io.dims.at(1));
  std::vector<float> input(elements);
  for (std::size_t i = 0; i < elements; ++i) input[i] = static_cast<float>(i) - static_cast<float>(elements) / 2;
  std::memcpy(buffers[1].data, input.data(), elements * sizeof(float));

  std::vector<qaic_execute_entry> entries;
  for (const Buffer& b : buffers) entries.push_back({b.handle, b.dir});
  qaic_execute execute{{static_cast<uint32_t>(entries.size()), dbc}, reinterpret_cast<uintptr_t>(entries.data())};
  if (drmIoctl(node, DRM_IOCTL_QAIC_EXECUTE_BO, &execute) != 0) fail("EXECUTE_BO");
  qaic_wait wait{buffers[3].handle, 20000, dbc, 0};
  if (drmIoctl(node, DRM_IOCTL_QAIC_WAIT_BO, &wait) != 0) fail("WAIT_BO");

  driver::ResponseDescriptorHeader response;
  std::memcpy(&response, buffers[3].data, sizeof response);
  if (response.magic != driver::kResponseDescriptorMagic || response.status != 0) {
    std::fprintf(stderr, "qaic_libdrm_client: response status %u\n", response.status);
    return 1;
  }
  for (std::size_t i = 0; i < elements; ++i) {
    float got;
    std::memcpy(&got, buffers[2].data + i * sizeof got, sizeof got);
    if (got != (input[i] > 0 ? input[i] : 0.0f)) {
      std::fprintf(stderr, "qaic_libdrm_client: y[%zu] = %g for x = %g\n", i, got, input[i]);
      return 1;
    }
  }
  std::printf("relu ok: %zu outputs read from an imported memfd\n", elements);
  for (Buffer& b : buffers) {
    if (drmCloseBufferHandle(node, b.handle) != 0) fail("drmCloseBufferHandle");
    munmap(b.data, b.bytes);
    close(b.fd);
  }
  close(node);
  return 0;
}
