/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finds the cards the way the vendor's userspace does on a host, knowing nothing of the emulator:
 * a PCI scan of /sys/bus/pci/devices for 17cb:a100, the accel/accelN directory of each function
 * and its dev file, libudev's accel subsystem mapped back to the PCI address, then
 * /dev/accel/accelN opened, libdrm's node checks asked, a BO created, given an mmap offset
 * and closed, and a BO exported and imported with libdrm's PRIME calls. Run inside
 * `qaic-emu --namespace` (KernelTreeTest); prints one line per step and exits 1 naming the
 * first step that failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libudev.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <drm.h>
#include <qaic/uapi/qaic_accel.h>
#include <xf86drm.h>

static int failures;

static void fail(const char* what, const char* path) {
  fprintf(stderr, "FAIL %s: %s (%s)\n", what, path, errno != 0 ? strerror(errno) : "unexpected content");
  ++failures;
}

/* snprintf that gives up on a path too long for `out` (none of ours is). */
static void format(char* out, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(out, size, fmt, args);
  va_end(args);
  if (n < 0 || (size_t)n >= size) {
    fprintf(stderr, "FAIL path too long: %s\n", out);
    exit(1);
  }
}

/* The first line of a sysfs file without its newline; "" when unreadable. */
static void readLine(const char* path, char* out, size_t size) {
  out[0] = '\0';
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  if (fgets(out, (int)size, f) == NULL) out[0] = '\0';
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
}

static int fileContains(const char* path, const char* needle) {
  char text[1024];
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return strstr(text, needle) != NULL;
}

/* The last component of where the link at `path` points. */
static const char* linkBase(const char* path, char* buf, size_t size) {
  ssize_t n = readlink(path, buf, size - 1);
  if (n < 0) return "";
  buf[n] = '\0';
  const char* slash = strrchr(buf, '/');
  return slash != NULL ? slash + 1 : buf;
}

static int sameFile(const char* a, const char* b) {
  char ra[PATH_MAX], rb[PATH_MAX];
  return realpath(a, ra) != NULL && realpath(b, rb) != NULL && strcmp(ra, rb) == 0;
}

/*
 * The firmware's status in the vendor's protocol, framed as its userspace frames it: one
 * PASSTHROUGH transaction whose length counts the 8-byte header, an 8-byte command header and
 * the 8-byte request (command 13, STATUS). The reply (command 14) is read at the offsets of
 * docs/device-protocol.md section 7, "The vendor's protocol"; prints what qaic-util -q shows.
 */
static void queryVendorStatus(int fd, const char* node) {
  unsigned char buffer[QAIC_MANAGE_MAX_MSG_LENGTH] = {0};
  const uint32_t request[6] = {1 /* PASSTHROUGH_FROM_USR */, 24, 13 /* STATUS */, 0, 0, 0};
  memcpy(buffer, request, sizeof request);
  struct qaic_manage_msg msg = {.len = 24, .count = 1, .data = (uintptr_t)buffer};
  errno = 0;
  if (ioctl(fd, DRM_IOCTL_QAIC_MANAGE, &msg) != 0) return fail("MANAGE vendor status", node);
  uint32_t transType, transLen, type, format = buffer[16];
  int32_t status;
  memcpy(&transType, buffer, 4);
  memcpy(&transLen, buffer + 4, 4);
  memcpy(&type, buffer + 8, 4);
  memcpy(&status, buffer + 12, 4);
  const unsigned char* device = buffer + 24; /* the device info follows the 8-byte format header */
  const unsigned char* resources = device + 152;
  uint32_t dramTotal, dramFree;
  uint16_t protocolMajor, protocolMinor;
  memcpy(&dramTotal, resources, 4);
  memcpy(&dramFree, resources + 4, 4);
  memcpy(&protocolMajor, device + 262, 2);
  memcpy(&protocolMinor, device + 264, 2);
  char serial[17] = {0};
  memcpy(serial, device + 100, 16);
  if (msg.count != 1 || transType != 2 /* PASSTHROUGH_TO_USR */ || transLen != 8 + 504 || type != 14 || status != 0 ||
      format != 12 || protocolMajor != 17 || resources[14] == 0 || resources[15] > resources[14] ||
      resources[13] > resources[12] || dramFree > dramTotal) {
    errno = 0;
    return fail("vendor status reply", node);
  }
  printf(
      "vendor status %s FW Version:%u.%u.%u.%u HW Serial:%s Dram Total:%u MB Dram Free:%u MB Vc Total:%u "
      "Vc Free:%u Nsp Total:%u Nsp Free:%u Networks Active:%u NNC Command Protocol Version:%u.%u Sku Type:%u\n",
      node, device[0], device[1], device[2], device[3], serial, dramTotal, dramFree, resources[12], resources[13],
      resources[14], resources[15], device[257], protocolMajor, protocolMinor, device[316]);
}

/* CREATE_BO, MMAP_BO and GEM_CLOSE on the node, as a client's first calls. */
static void exerciseNode(const char* node) {
  errno = 0;
  int fd = open(node, O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail("open", node);
  /* libdrm's node-type checks: what they answer goes in docs/emulator.md. */
  errno = 0;
  int type = drmGetNodeTypeFromFd(fd);
  int typeErrno = errno;
  drmDevicePtr device = NULL;
  int device2 = drmGetDevice2(fd, 0, &device);
  if (device != NULL) drmFreeDevice(&device);
  drmVersionPtr version = drmGetVersion(fd);
  printf("libdrm %s node type %d (%s) device2 %d version %s\n", node, type, strerror(typeErrno), device2,
         version != NULL ? version->name : "-");
  if (version != NULL) drmFreeVersion(version);
  queryVendorStatus(fd, node);
  struct qaic_create_bo create = {.size = 4096};
  struct qaic_mmap_bo map = {0};
  if (ioctl(fd, DRM_IOCTL_QAIC_CREATE_BO, &create) != 0) {
    fail("CREATE_BO", node);
  } else {
    map.handle = create.handle;
    if (ioctl(fd, DRM_IOCTL_QAIC_MMAP_BO, &map) != 0 || map.offset == 0) fail("MMAP_BO", node);
    struct drm_gem_close close_arg = {.handle = create.handle};
    if (ioctl(fd, DRM_IOCTL_GEM_CLOSE, &close_arg) != 0)
      fail("GEM_CLOSE", node);
    else
      printf("ioctl %s bo %u offset 0x%llx\n", node, create.handle, (unsigned long long)map.offset);
  }
  close(fd);
}

/* The descriptor flags an export must have: close-on-exec as asked, and the access mode asked
 * (accessMode -1: any; mainline hands a BO's later exports its first dma-buf again). */
static int exportIs(int fd, int cloexec, int accessMode) {
  int fdFlags = fcntl(fd, F_GETFD), statusFlags = fcntl(fd, F_GETFL);
  return fdFlags >= 0 && statusFlags >= 0 && ((fdFlags & FD_CLOEXEC) != 0) == cloexec &&
         (accessMode < 0 || (statusFlags & O_ACCMODE) == accessMode);
}

/* A BO's first export without DRM_RDWR is read-only. */
static void checkReadOnlyExport(int fd, const char* node) {
  struct qaic_create_bo create = {.size = 4096};
  int exported = -1;
  errno = 0;
  if (ioctl(fd, DRM_IOCTL_QAIC_CREATE_BO, &create) != 0) return fail("CREATE_BO for a read-only export", node);
  if (drmPrimeHandleToFD(fd, create.handle, DRM_CLOEXEC, &exported) != 0 || !exportIs(exported, 1, O_RDONLY))
    fail("drmPrimeHandleToFD(DRM_CLOEXEC): not a close-on-exec read-only descriptor", node);
  if (exported >= 0) close(exported);
  if (drmCloseBufferHandle(fd, create.handle) != 0) fail("GEM_CLOSE after a read-only export", node);
}

/* errno of a call that must fail, or 0 when it succeeded. */
static int primeExportErrno(int fd, uint32_t handle, uint32_t flags) {
  int out = -1;
  if (drmPrimeHandleToFD(fd, handle, flags, &out) == 0) {
    close(out);
    return 0;
  }
  return errno;
}

/* The same request number on descriptors that are not a node: answered as without the
 * emulator (the kernel's own errno, or the FUSE file's). */
static void checkPrimeNumberElsewhere(const char* node) {
  struct drm_prime_handle args = {.handle = 1, .flags = DRM_CLOEXEC, .fd = -1};
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  errno = 0;
  if (null < 0 || ioctl(null, DRM_IOCTL_PRIME_HANDLE_TO_FD, &args) == 0 || errno != ENOTTY)
    fail("PRIME_HANDLE_TO_FD on /dev/null is not ENOTTY", node);
  if (null >= 0) close(null);
  char attribute[PATH_MAX];
  format(attribute, sizeof attribute, "/sys/class/accel/%s/dev", strrchr(node, '/') + 1);
  int file = open(attribute, O_RDONLY | O_CLOEXEC);
  errno = 0;
  if (file < 0 || ioctl(file, DRM_IOCTL_PRIME_HANDLE_TO_FD, &args) == 0 || errno != ENOTTY)
    fail("PRIME_HANDLE_TO_FD on an attribute file is not ENOTTY", attribute);
  if (file >= 0) close(file);
  errno = 0;
  if (ioctl(9999, DRM_IOCTL_PRIME_HANDLE_TO_FD, &args) == 0 || errno != EBADF)
    fail("PRIME_HANDLE_TO_FD on a closed descriptor is not EBADF", node);
}

/* libdrm's PRIME as an unmodified client uses it: a BO exported with drmPrimeHandleToFD (fd -1
 * in, a new descriptor out) twice, imported on a second open file of the
 * node, mainline's errors, and everything closed. */
static void exercisePrime(const char* node) {
  enum { kBytes = 8192 };
  int first = open(node, O_RDWR | O_CLOEXEC), second = open(node, O_RDWR | O_CLOEXEC);
  struct qaic_create_bo create = {.size = kBytes};
  errno = 0;
  if (first < 0 || second < 0 || ioctl(first, DRM_IOCTL_QAIC_CREATE_BO, &create) != 0) {
    fail("PRIME: open and CREATE_BO", node);
    if (first >= 0) close(first);
    if (second >= 0) close(second);
    return;
  }
  int readWrite = -1, readOnly = -1;
  uint32_t imported = 0, again = 0;
  struct stat rw = {0}, ro = {0};
  errno = 0;
  if (drmPrimeHandleToFD(first, create.handle, DRM_CLOEXEC | DRM_RDWR, &readWrite) != 0 || readWrite < 0)
    fail("drmPrimeHandleToFD(DRM_CLOEXEC | DRM_RDWR)", node);
  else if (!exportIs(readWrite, 1, O_RDWR))
    fail("read-write export: not close-on-exec and O_RDWR", node);
  errno = 0;
  if (drmPrimeHandleToFD(first, create.handle, 0, &readOnly) != 0 || readOnly < 0)
    fail("drmPrimeHandleToFD(0)", node);
  else if (!exportIs(readOnly, 0, -1))
    fail("second export without DRM_CLOEXEC: close-on-exec", node);
  if (readWrite >= 0 && readOnly >= 0) {
    struct qaic_mmap_bo mapBo = {.handle = create.handle};
    errno = 0;
    if (ioctl(first, DRM_IOCTL_QAIC_MMAP_BO, &mapBo) != 0) fail("PRIME: MMAP_BO", node);
    /* An export is the node's memory file, positioned at the BO (its MMAP_BO offset): both
     * exports are one memory, and what the node's mapping writes they read. */
    const off_t at = (off_t)mapBo.offset;
    errno = 0;
    if (fstat(readWrite, &rw) != 0 || fstat(readOnly, &ro) != 0 || rw.st_ino != ro.st_ino ||
        lseek(readWrite, 0, SEEK_CUR) != at || lseek(readOnly, 0, SEEK_CUR) != at)
      fail("exports: not one memory positioned at the BO", node);
    const char text[] = "through the node's mapping";
    char back[sizeof text] = {0};
    void* mapped = mmap(NULL, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, first, at);
    if (mapped == MAP_FAILED) {
      /* An emulator without FUSE passthrough (not privileged) says so, and mmap is ENODEV. */
      const int mmapError = errno;
      char attribute[PATH_MAX], passthrough[16] = "";
      format(attribute, sizeof attribute, "/sys/class/accel/%s/qaic-emu/passthrough", strrchr(node, '/') + 1);
      readLine(attribute, passthrough, sizeof passthrough);
      errno = mmapError;
      if (mmapError != ENODEV || strcmp(passthrough, "0") != 0) fail("PRIME: mmap of the node", node);
      printf("mmap %s ENODEV, passthrough %s\n", node, passthrough);
    } else {
      memcpy((char*)mapped + 4096, text, sizeof text);
      if (pread(readOnly, back, sizeof back, at + 4096) != (ssize_t)sizeof back || memcmp(text, back, sizeof text) != 0)
        fail("exports: what the node's mapping writes the export does not read", node);
      munmap(mapped, kBytes);
    }
    errno = 0;
    if (drmPrimeFDToHandle(second, readWrite, &imported) != 0 || imported == 0)
      fail("drmPrimeFDToHandle on a second open file", node);
    errno = 0;
    if (drmPrimeFDToHandle(first, readOnly, &again) != 0 || again != create.handle)
      fail("drmPrimeFDToHandle of its own export: not the exported handle", node);
  }
  errno = 0;
  if (primeExportErrno(first, create.handle, DRM_CLOEXEC | 1u) != EINVAL) fail("PRIME export flag 1: not EINVAL", node);
  errno = 0;
  if (primeExportErrno(first, create.handle + 1000, DRM_CLOEXEC) != ENOENT)
    fail("PRIME export of an unknown handle: not ENOENT", node);
  checkReadOnlyExport(first, node);
  checkPrimeNumberElsewhere(node);
  errno = 0;
  if (imported != 0 && drmCloseBufferHandle(second, imported) != 0) fail("GEM_CLOSE of the import", node);
  if (drmCloseBufferHandle(first, create.handle) != 0) fail("GEM_CLOSE of the export", node);
  printf("prime %s export %d bytes, import handle %u, own export back as %u\n", node, (int)create.size, imported,
         again);
  if (readWrite >= 0) close(readWrite);
  if (readOnly >= 0) close(readOnly);
  close(first);
  close(second);
}

/* One PCI function that is ours: its attributes, its accel device, the links to it, the node. */
static void checkFunction(const char* bdf) {
  char pci[PATH_MAX], path[PATH_MAX], value[256], link[PATH_MAX];
  format(pci, sizeof pci, "/sys/bus/pci/devices/%s", bdf);
  format(path, sizeof path, "%s/class", pci);
  readLine(path, value, sizeof value);
  if (strcmp(value, "0x120000") != 0) fail("class", path);
  format(path, sizeof path, "%s/driver", pci);
  if (strcmp(linkBase(path, link, sizeof link), "qaic") != 0) fail("driver link", path);
  format(path, sizeof path, "%s/resource", pci);
  readLine(path, value, sizeof value);
  if (strncmp(value, "0x", 2) != 0 || strstr(value, "0x0000000000000000 0x0000000000000000") == value)
    fail("resource (BAR0)", path);

  format(path, sizeof path, "%s/accel", pci);
  DIR* accel = opendir(path);
  if (accel == NULL) return fail("accel directory", path);
  struct dirent* e;
  while ((e = readdir(accel)) != NULL) {
    if (strncmp(e->d_name, "accel", 5) != 0) continue;
    char dev[PATH_MAX], expected[64], node[PATH_MAX], byNumbers[PATH_MAX], byClass[PATH_MAX];
    format(dev, sizeof dev, "%s/accel/%s", pci, e->d_name);
    format(path, sizeof path, "%s/dev", dev);
    readLine(path, value, sizeof value);
    unsigned minor = (unsigned)strtoul(e->d_name + 5, NULL, 10);
    format(expected, sizeof expected, "261:%u", minor);
    if (strcmp(value, expected) != 0) fail("dev", path);
    format(path, sizeof path, "%s/uevent", dev);
    format(expected, sizeof expected, "DEVNAME=accel/%s", e->d_name);
    if (!fileContains(path, expected) || !fileContains(path, "MAJOR=261")) fail("uevent", path);
    format(path, sizeof path, "%s/subsystem", dev);
    if (strcmp(linkBase(path, link, sizeof link), "accel") != 0) fail("subsystem link", path);
    format(byNumbers, sizeof byNumbers, "/sys/dev/char/%s", value);
    format(byClass, sizeof byClass, "/sys/class/accel/%s", e->d_name);
    if (!sameFile(byNumbers, dev)) fail("/sys/dev/char link", byNumbers);
    if (!sameFile(byClass, dev)) fail("/sys/class/accel link", byClass);
    printf("pci %s %s dev %s\n", bdf, e->d_name, value);
    format(node, sizeof node, "/dev/accel/%s", e->d_name);
    exerciseNode(node);
    exercisePrime(node);
  }
  closedir(accel);
}

static int scanPci(void) {
  int found = 0;
  DIR* bus = opendir("/sys/bus/pci/devices");
  if (bus == NULL) {
    fail("PCI scan", "/sys/bus/pci/devices");
    return 0;
  }
  struct dirent* e;
  while ((e = readdir(bus)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[PATH_MAX], vendor[32], device[32];
    format(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", e->d_name);
    readLine(path, vendor, sizeof vendor);
    format(path, sizeof path, "/sys/bus/pci/devices/%s/device", e->d_name);
    readLine(path, device, sizeof device);
    if (strcmp(vendor, "0x17cb") != 0 || strcmp(device, "0xa100") != 0) continue;
    ++found;
    checkFunction(e->d_name);
  }
  closedir(bus);
  return found;
}

/* libudev's view: every device of the accel subsystem, its node and its PCI parent. */
static int scanUdev(void) {
  int found = 0;
  struct udev* udev = udev_new();
  if (udev == NULL) {
    fail("udev_new", "");
    return 0;
  }
  struct udev_enumerate* en = udev_enumerate_new(udev);
  udev_enumerate_add_match_subsystem(en, "accel");
  udev_enumerate_scan_devices(en);
  struct udev_list_entry* item;
  udev_list_entry_foreach(item, udev_enumerate_get_list_entry(en)) {
    const char* syspath = udev_list_entry_get_name(item);
    struct udev_device* dev = udev_device_new_from_syspath(udev, syspath);
    if (dev == NULL) {
      fail("udev_device_new_from_syspath", syspath);
      continue;
    }
    struct udev_device* pci = udev_device_get_parent_with_subsystem_devtype(dev, "pci", NULL);
    const char* node = udev_device_get_devnode(dev);
    const char* numbers = udev_device_get_sysattr_value(dev, "dev");
    /* The node's numbers lead back to the same device (through /sys/dev/char). */
    struct udev_device* byNumbers = udev_device_new_from_devnum(udev, 'c', udev_device_get_devnum(dev));
    if (byNumbers == NULL || strcmp(udev_device_get_syspath(byNumbers), syspath) != 0)
      fail("udev_device_new_from_devnum", syspath);
    if (byNumbers != NULL) udev_device_unref(byNumbers);
    if (pci == NULL) {
      fail("udev PCI parent", syspath);
    } else {
      printf("udev %s %s node %s dev %s vendor %s driver %s\n", udev_device_get_sysname(pci),
             udev_device_get_sysname(dev), node != NULL ? node : "-", numbers != NULL ? numbers : "-",
             udev_device_get_sysattr_value(pci, "vendor"), udev_device_get_driver(pci));
      ++found;
    }
    udev_device_unref(dev);
  }
  udev_enumerate_unref(en);
  udev_unref(udev);
  return found;
}

int main(void) {
  int pci = scanPci();
  int udev = scanUdev();
  printf("found %d by PCI scan, %d by udev\n", pci, udev);
  if (pci == 0) fail("no 17cb:a100 function", "/sys/bus/pci/devices");
  if (udev != pci) fail("udev and the PCI scan disagree", "accel");
  return failures == 0 ? 0 : 1;
}
