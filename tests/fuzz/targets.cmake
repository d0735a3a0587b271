# SPDX-License-Identifier: Apache-2.0
# One qaic_fuzz_target() per fuzzed entry point; each part adds its own line.
qaic_fuzz_target(ir_parser SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/ir_parser.cpp LIBS qaic_ir)
qaic_fuzz_target(qpc_reader SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/qpc_reader.cpp LIBS qaic_container)
qaic_fuzz_target(onnx_import SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/onnx_import.cpp LIBS qaic_onnx)
# The batch JSON reader and the buffer-shape rules it shares with libqaic, compiled from their
# own sources so the fuzz build needs no libqaic.so.
qaic_fuzz_target(batch_json
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/batch_json.cpp ${PROJECT_SOURCE_DIR}/utils/qaic-runner/BatchJson.cpp
          ${PROJECT_SOURCE_DIR}/libqaic/runtime/front/IoValidation.cpp
          ${PROJECT_SOURCE_DIR}/libqaic/runtime/front/Errors.cpp
  LIBS qaic_uapi nlohmann_json::nlohmann_json
  INCLUDES ${PROJECT_SOURCE_DIR}/utils/qaic-runner ${PROJECT_SOURCE_DIR}/tests/support)
# The emulator's ioctl decoding and MANAGE messages, in-process on one Device (no FUSE).
qaic_fuzz_target(emu_ioctl
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/emu_ioctl.cpp ${CMAKE_CURRENT_SOURCE_DIR}/EmuIoctlHarness.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/EmuIoctlRawCalls.cpp ${CMAKE_CURRENT_SOURCE_DIR}/EmuIoctlBuiltCalls.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/EmuIoctlDrmCalls.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/EmuIoctlSeeds.cpp ${PROJECT_SOURCE_DIR}/tests/support/ReluProgram.cpp
  LIBS qaic_emu_core qaic_driver
  INCLUDES ${PROJECT_SOURCE_DIR}/tests/support)
qaic_fuzz_target(qaicd_protocol SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/qaicd_protocol.cpp LIBS qaic_qaicd_protocol)
# qaicd's kubelet device-plugin service, in-process on published inventories (no socket).
qaic_fuzz_target(kubelet_service
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kubelet_service.cpp ${CMAKE_CURRENT_SOURCE_DIR}/KubeletServiceInput.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/KubeletServiceChecks.cpp ${CMAKE_CURRENT_SOURCE_DIR}/KubeletServiceSeeds.cpp
  LIBS qaicd_kubelet)
# qaicrt's conversion of Python arguments, through the module itself in an embedded interpreter.
qaic_fuzz_target(python_args
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/python_args.cpp ${CMAKE_CURRENT_SOURCE_DIR}/PythonArgsObjects.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/PythonArgsSet.cpp
  LIBS qaicrt_fuzz
  HIDDEN_VISIBILITY)
