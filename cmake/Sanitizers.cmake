# SPDX-License-Identifier: Apache-2.0
if(QAIC_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${QAIC_SANITIZE}")
  foreach(s IN LISTS _sanitizers)
    add_compile_options(-fsanitize=${s})
    add_link_options(-fsanitize=${s})
  endforeach()
  add_compile_options(-fno-omit-frame-pointer -fno-sanitize-recover=all)
endif()
