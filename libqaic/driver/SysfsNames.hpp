// SPDX-License-Identifier: Apache-2.0
// The names of the files in a device's class directory ($QAIC_ROOT/sys/class/accel/accelN/),
// relative to it: the one definition the emulator publishes and the runtime, the tools, qaicd
// and the tests read. Mainline's qaic driver gives the class attributes (dbc<N>_state) and the
// PCI core gives device/; what only the emulator adds lives under qaic-emu/ (docs/emulator.md),
// so a program that reads only the first two works the same on a card.
#pragma once

#include <cstdint>
#include <string>

namespace qaic::driver::sysfs {

// ---- The PCI function (device/), with the kernel's names and formats -------------------------
inline constexpr const char* kPciVendor = "device/vendor";
inline constexpr const char* kPciDevice = "device/device";
inline constexpr const char* kPciClass = "device/class";  // 0x120000: a processing accelerator
inline constexpr const char* kPciSubsystemVendor = "device/subsystem_vendor";
inline constexpr const char* kPciSubsystemDevice = "device/subsystem_device";
// One line per region, "start end flags" in hex; the BARs of mainline's layout.
inline constexpr const char* kPciResource = "device/resource";
inline constexpr const char* kPciConfig = "device/config";  // the configuration space, binary
inline constexpr const char* kPciUevent = "device/uevent";  // DRIVER, PCI_ID, PCI_SLOT_NAME, ...
inline constexpr const char* kPciIrq = "device/irq";        // the legacy interrupt line (libpci reads it)
inline constexpr const char* kNumaNode = "device/numa_node";
inline constexpr const char* kMaxLinkSpeed = "device/max_link_speed";
inline constexpr const char* kMaxLinkWidth = "device/max_link_width";
inline constexpr const char* kCurrentLinkSpeed = "device/current_link_speed";
inline constexpr const char* kCurrentLinkWidth = "device/current_link_width";
// hwmon<N> directories (the kernel numbers them) under kHwmonDir, each with these files.
inline constexpr const char* kHwmonDir = "device/hwmon";
inline constexpr const char* kHwmonName = "name";
// The files the vendor's qaic-util reads for the SoC temperature, the power and its cap.
inline constexpr const char* kHwmonTemperature = "temp2_input";  // millidegrees Celsius
inline constexpr const char* kHwmonPower = "power1_input";       // microwatts
inline constexpr const char* kHwmonPowerCap = "power1_max";      // microwatts
// The AER counters mainline's qaic adds to the PCI device.
inline constexpr const char* kCeCount = "device/ce_count";
inline constexpr const char* kUeCount = "device/ue_count";
inline constexpr const char* kUeNonfatalCount = "device/ue_nonfatal_count";

// ---- the accel device's own files (the driver core's) -------------------------------------------
inline constexpr uint32_t kAccelMajor = 261;      // the character major of every accel node
inline constexpr const char* kDev = "dev";        // "261:<minor>", the character device's numbers
inline constexpr const char* kUevent = "uevent";  // MAJOR, MINOR and DEVNAME, as udev reads them

// ---- mainline's class attributes ---------------------------------------------------------------
// The state of DBC `dbc`, a number 0-5 (dbcStateName in DeviceProtocol.hpp).
inline std::string dbcState(uint32_t dbc) { return "dbc" + std::to_string(dbc) + "_state"; }

// ---- the emulator's own (qaic-emu/) ----------------------------------------------------------
inline constexpr const char* kEmuDir = "qaic-emu";
inline constexpr const char* kEmuPid = "qaic-emu/pid";         // the emulator's process
inline constexpr const char* kEmuShmDir = "qaic-emu/shm_dir";  // BO memory files and windows
// 1 when mmap of the node maps a BO (FUSE passthrough), 0 when it is ENODEV and a client maps the
// node's memory file (driver::deviceMemoryFileName) in shm_dir instead.
inline constexpr const char* kEmuPassthrough = "qaic-emu/passthrough";
// The instance's compute pool (shared by all its devices): the host threads every NSP computes
// on, those computing now, and the most that ever computed at once.
inline constexpr const char* kEmuComputeThreads = "qaic-emu/compute_threads";
inline constexpr const char* kEmuComputeBusy = "qaic-emu/compute_busy";
inline constexpr const char* kEmuComputeBusyMax = "qaic-emu/compute_busy_max";
// The STATUS query's figures as files (the tools ask the query; a shell can read these).
inline constexpr const char* kEmuStatus = "qaic-emu/status";  // Initializing, Ready or Error
inline constexpr const char* kEmuPciAddress = "qaic-emu/pci_address";
inline constexpr const char* kEmuNspTotal = "qaic-emu/nsp_total";
inline constexpr const char* kEmuNspFree = "qaic-emu/nsp_free";
inline constexpr const char* kEmuVcTotal = "qaic-emu/vc_total";
inline constexpr const char* kEmuVcFree = "qaic-emu/vc_free";
inline constexpr const char* kEmuMcidTotal = "qaic-emu/mcid_total";
inline constexpr const char* kEmuMcidFree = "qaic-emu/mcid_free";
inline constexpr const char* kEmuSemTotal = "qaic-emu/sem_total";
inline constexpr const char* kEmuSemFree = "qaic-emu/sem_free";
inline constexpr const char* kEmuDramTotal = "qaic-emu/dram_total";  // MiB
inline constexpr const char* kEmuDramFree = "qaic-emu/dram_free";
inline constexpr const char* kEmuNetworksLoaded = "qaic-emu/networks_loaded";
inline constexpr const char* kEmuNetworksActive = "qaic-emu/networks_active";
inline constexpr const char* kEmuConstantsLoaded = "qaic-emu/constants_loaded";
inline constexpr const char* kEmuConstantsInUse = "qaic-emu/constants_in_use";
inline constexpr const char* kEmuFwVersion = "qaic-emu/fw_version";
inline constexpr const char* kEmuHwVersion = "qaic-emu/hw_version";
inline constexpr const char* kEmuSku = "qaic-emu/sku";
inline constexpr const char* kEmuNspFrequencyMhz = "qaic-emu/nsp_frequency_mhz";
// The firmware's identity strings, as the vendor's tools print them.
inline constexpr const char* kEmuSerial = "qaic-emu/serial";
inline constexpr const char* kEmuBoardSerial = "qaic-emu/board_serial";
inline constexpr const char* kEmuFwQcImageVersion = "qaic-emu/fw_qc_image_version";
inline constexpr const char* kEmuFwOemImageVersion = "qaic-emu/fw_oem_image_version";
inline constexpr const char* kEmuFwImageVariant = "qaic-emu/fw_image_variant";
inline constexpr const char* kEmuNspVersion = "qaic-emu/nsp_version";
inline constexpr const char* kEmuNspQcImageVersion = "qaic-emu/nsp_qc_image_version";
inline constexpr const char* kEmuNspImageVariant = "qaic-emu/nsp_image_variant";
inline constexpr const char* kEmuDeviceCapabilities = "qaic-emu/device_capabilities";
inline constexpr const char* kEmuDdrFrequencyMhz = "qaic-emu/ddr_frequency_mhz";
// The cards this one reaches peer to peer (the emulator's p2p_groups): their QIDs, ascending,
// separated by spaces; an empty line when it has none. Mainline's driver publishes no topology.
inline constexpr const char* kEmuP2pPeers = "qaic-emu/p2p_peers";
// Bytes this card's parts of multi-device programs sent to and received from the other parts
// through their collectives, since the emulator started (decimal).
inline constexpr const char* kEmuP2pTxBytes = "qaic-emu/p2p_tx_bytes";
inline constexpr const char* kEmuP2pRxBytes = "qaic-emu/p2p_rx_bytes";
// Fault injection (writable by the emulator's user).
inline constexpr const char* kFaultNspHang = "qaic-emu/fault/nsp_hang";
inline constexpr const char* kFaultDmaFail = "qaic-emu/fault/dma_fail";
inline constexpr const char* kFaultError = "qaic-emu/fault/error";
inline constexpr const char* kFaultReset = "qaic-emu/fault/reset";
inline constexpr const char* kFaultRemove = "qaic-emu/fault/remove";
inline constexpr const char* kFaultControlHang = "qaic-emu/fault/control_hang";
// While set, a reset's firmware does not boot: the reset fails after mhi_timeout_ms.
inline constexpr const char* kFaultResetHang = "qaic-emu/fault/reset_hang";
// How the channel threads waited for requests (the polling data path): sleeps on the doorbell
// futex, and polls of the ring's tail (poll rounds after the ring emptied, and looks after a poll
// interval that no doorbell ended).
inline constexpr const char* kEmuDoorbellSleeps = "qaic-emu/datapath/doorbell_sleeps";
inline constexpr const char* kEmuDoorbellPolls = "qaic-emu/datapath/doorbell_polls";
// Responses the device signalled: eventfd writes (the MSI), and response futex wakes of a host
// thread that announced that it sleeps.
inline constexpr const char* kEmuResponseInterrupts = "qaic-emu/datapath/response_interrupts";
inline constexpr const char* kEmuResponseWakes = "qaic-emu/datapath/response_wakes";
// A partition's origin (only in a partition's directory).
inline constexpr const char* kPartitionDir = "qaic-emu/partition";
inline constexpr const char* kPartitionParent = "qaic-emu/partition/parent";
inline constexpr const char* kPartitionOwnerUid = "qaic-emu/partition/owner_uid";
inline constexpr const char* kPartitionOwnerGid = "qaic-emu/partition/owner_gid";
inline constexpr const char* kPartitionMode = "qaic-emu/partition/mode";
inline constexpr const char* kPartitionHolderPid = "qaic-emu/partition/holder_pid";
inline constexpr const char* kPartitionLabel = "qaic-emu/partition/label";

}  // namespace qaic::driver::sysfs
