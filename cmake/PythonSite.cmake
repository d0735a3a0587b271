# SPDX-License-Identifier: Apache-2.0
# Where make install puts qaicrt and the qaic package under a prefix, chosen when installing (the
# prefix may be given then), and where make install-compat links to them: Debian's path for the
# prefix, lib/python3/dist-packages under /usr (where the package puts them),
# lib/python<version>/dist-packages under any other (/usr/local/lib/python3.X/dist-packages is on
# Debian's python3 path). Included by cmake/Install.cmake's install code and cmake/Compat.cmake.
function(qaic_python_site prefix version out)
  if(prefix STREQUAL "/usr")
    set(${out} lib/python3/dist-packages PARENT_SCOPE)
  else()
    set(${out} lib/python${version}/dist-packages PARENT_SCOPE)
  endif()
endfunction()
