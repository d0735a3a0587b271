# SPDX-License-Identifier: Apache-2.0
# make install-compat / make uninstall-compat: the vendor's paths under /opt/qti-aic as symlinks
# into the installed stack, for code that runs the card's tools and modules by those paths
# (efficient-transformers runs /opt/qti-aic/exec/qaic-exec and imports qaicrt and QAicApi_pb2 from
# /opt/qti-aic/dev/lib/<machine> and /opt/qti-aic/dev/python). Links point at the final prefix;
# DESTDIR (from the environment) stages them, as for make install.
#
#   cmake -DMODE=install -DBUILD=<build> -DPREFIX=<prefix> [-DCOMPAT_ROOT=/opt/qti-aic]
#         [-DMANIFEST=<file>] -P Compat.cmake
#   cmake -DMODE=uninstall [-DMANIFEST=<file>] [-DOPTIONAL=ON] -P Compat.cmake
#
# The manifest (default <build>/install_compat_manifest.txt) lists each link made ("link PATH")
# and each directory the install created ("dir PATH"); uninstall removes exactly those links,
# then those directories when empty, then the manifest. OPTIONAL: no manifest is not an error
# (make uninstall runs it whether or not compat was installed).
cmake_minimum_required(VERSION 3.20)

if(NOT MANIFEST)
  if(NOT BUILD)
    message(FATAL_ERROR "compat: give -DBUILD=<build dir> or -DMANIFEST=<file>")
  endif()
  set(MANIFEST "${BUILD}/install_compat_manifest.txt")
endif()

if(MODE STREQUAL "uninstall")
  if(NOT EXISTS "${MANIFEST}")
    if(OPTIONAL)
      return()
    endif()
    message(FATAL_ERROR "uninstall-compat: ${MANIFEST} does not exist; make install-compat was not run "
                        "from this build tree")
  endif()
  file(STRINGS "${MANIFEST}" entries)
  set(removed 0)
  set(dirs "")
  foreach(entry IN LISTS entries)
    string(REGEX MATCH "^(link|dir) (.*)$" _ "${entry}")
    if(CMAKE_MATCH_1 STREQUAL "link")
      # Only a link is ours: a file put there since is someone else's.
      if(IS_SYMLINK "${CMAKE_MATCH_2}")
        file(REMOVE "${CMAKE_MATCH_2}")
        math(EXPR removed "${removed} + 1")
      endif()
    elseif(CMAKE_MATCH_1 STREQUAL "dir")
      list(PREPEND dirs "${CMAKE_MATCH_2}")  # deepest (made last) first
    endif()
  endforeach()
  foreach(dir IN LISTS dirs)
    file(GLOB left "${dir}/*")
    if(IS_DIRECTORY "${dir}" AND NOT left)
      file(REMOVE_RECURSE "${dir}")  # empty
    endif()
  endforeach()
  file(REMOVE "${MANIFEST}")
  message(STATUS "uninstall-compat: removed ${removed} links listed in ${MANIFEST}")
  return()
endif()

if(NOT MODE STREQUAL "install")
  message(FATAL_ERROR "compat: MODE must be install or uninstall, not '${MODE}'")
endif()
if(NOT BUILD OR NOT EXISTS "${BUILD}/install/compat-names.cmake")
  message(FATAL_ERROR "install-compat: ${BUILD}/install/compat-names.cmake is missing: configure and build "
                      "the tree first (make)")
endif()
if(NOT PREFIX)
  message(FATAL_ERROR "install-compat: give -DPREFIX=<the prefix make install used>")
endif()
if(NOT COMPAT_ROOT)
  set(COMPAT_ROOT /opt/qti-aic)
endif()
# QAIC_COMPAT_MODULE (the extension's file name), QAIC_PYTHON_VERSION, QAIC_COMPAT_LIBDIR.
include("${BUILD}/install/compat-names.cmake")
execute_process(COMMAND uname -m OUTPUT_VARIABLE machine OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)

string(REGEX REPLACE "/+$" "" PREFIX "${PREFIX}")
# The Python directory make install chose for the prefix.
include("${CMAKE_CURRENT_LIST_DIR}/PythonSite.cmake")
qaic_python_site("${PREFIX}" "${QAIC_PYTHON_VERSION}" site)
set(site "${PREFIX}/${site}")
# link path under the compat root -> target in the installed stack. libqaic.so.1 beside the
# module: the loader finds it there through the module's $ORIGIN RUNPATH entry, since $ORIGIN is
# the directory of the link, not of its target, whatever the prefix.
set(links
  "exec/qaic-exec" "${PREFIX}/bin/qaic-exec"
  "exec/qaic-runner" "${PREFIX}/bin/qaic-runner"
  "tools/qaic-util" "${PREFIX}/bin/qaic-util"
  "dev/lib/${machine}/${QAIC_COMPAT_MODULE}" "${site}/${QAIC_COMPAT_MODULE}"
  "dev/lib/${machine}/libqaic.so.1" "${PREFIX}/${QAIC_COMPAT_LIBDIR}/libqaic.so.1"
  "dev/python/QAicApi_pb2.py" "${site}/QAicApi_pb2.py")

set(stage "$ENV{DESTDIR}${COMPAT_ROOT}")
set(manifest "")
if(EXISTS "${MANIFEST}")
  file(STRINGS "${MANIFEST}" manifest)  # an earlier install's entries stay listed
endif()
list(LENGTH links count)
math(EXPR last "${count} - 1")
# Every link is checked before any is made: a file in the way of a later one would otherwise stop
# the install with the earlier links made and not yet in the manifest, beyond uninstall's reach.
foreach(index RANGE 0 ${last} 2)
  list(GET links ${index} name)
  if(EXISTS "${stage}/${name}" AND NOT IS_SYMLINK "${stage}/${name}")
    message(FATAL_ERROR "install-compat: ${stage}/${name} exists and is not a link; not replacing it")
  endif()
endforeach()
foreach(index RANGE 0 ${last} 2)
  math(EXPR target_index "${index} + 1")
  list(GET links ${index} name)
  list(GET links ${target_index} target)
  set(link "${stage}/${name}")
  get_filename_component(parent "${link}" DIRECTORY)
  # The directories this install creates, outermost first.
  set(created "")
  set(dir "${parent}")
  while(NOT IS_DIRECTORY "${dir}")
    list(PREPEND created "${dir}")
    get_filename_component(dir "${dir}" DIRECTORY)
  endwhile()
  foreach(dir IN LISTS created)
    file(MAKE_DIRECTORY "${dir}")
    list(APPEND manifest "dir ${dir}")
  endforeach()
  file(REMOVE "${link}")
  file(CREATE_LINK "${target}" "${link}" SYMBOLIC)
  message(STATUS "Linking: ${link} -> ${target}")
  list(APPEND manifest "link ${link}")
endforeach()
list(REMOVE_DUPLICATES manifest)
list(JOIN manifest "\n" text)
file(WRITE "${MANIFEST}" "${text}\n")
