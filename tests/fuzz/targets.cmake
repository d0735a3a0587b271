# One qaic_fuzz_target() per fuzzed entry point; each part adds its own line.
qaic_fuzz_target(ir_parser SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/ir_parser.cpp LIBS qaic_ir)
qaic_fuzz_target(qpc_reader SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/qpc_reader.cpp LIBS qaic_container)
qaic_fuzz_target(onnx_import SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/onnx_import.cpp LIBS qaic_onnx)
