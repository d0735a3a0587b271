# SPDX-License-Identifier: Apache-2.0
# make install / make uninstall / make package: what the stack installs (GNUInstallDirs; PREFIX
# and DESTDIR as usual). Only public parts are installed: libqaic.so with its SONAME, the public
# headers, qaic.pc and the qaic CMake package, the programs, their man pages, the udev rules, the
# systemd units, an emulator configuration and the documentation. Internal static libraries,
# benchmarks and tests never are.
#
# Components (one Debian package each, deploy/debian/build-packages.sh):
#   runtime   libqaic.so.<SOVERSION>                          -> libqaic1
#   dev       headers, libqaic.so, qaic.pc, lib/cmake/qaic     -> libqaic-dev
#   tools     qaic-runner, qaic-util, qaic-exec (qaic-compile), lightnet, udev rules, docs
#                                                              -> qaic-tools
#   daemon    qaicd, qaicd.service, qaicd.socket               -> qaicd
#   emulator  qaic-emu, qaic-emu@.service, etc/qaic-emu        -> qaic-emu
#   python    the qaicrt module, its stubs, the qaic package    -> python3-qaic
# On a multiarch system (Debian) libraries go to lib/<triplet> whatever the prefix, so that one
# build tree installs the same layout into /usr (the packages), /usr/local or a private prefix.
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH "Object code libraries")
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The library's ABI version, independent of the project's: bumped when a public header changes
# incompatibly.
set(QAIC_SOVERSION 1)
set(QAIC_LIBRARY_VERSION ${QAIC_SOVERSION}.${PROJECT_VERSION_MINOR}.${PROJECT_VERSION_PATCH})
set_target_properties(qaic PROPERTIES VERSION ${QAIC_LIBRARY_VERSION} SOVERSION ${QAIC_SOVERSION})

set(QAIC_INSTALL_PROGRAMS qaic-runner qaic-util qaic-exec lightnet)
set(QAIC_INSTALL_EMULATOR qaic-emu)
set(QAIC_INSTALL_DAEMON qaicd)

# Programs that link libqaic.so find it relative to themselves ($ORIGIN/../lib/<triplet>), so
# they run from any prefix, /usr included (where the path is the system's own).
file(RELATIVE_PATH _qaic_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
set_target_properties(${QAIC_INSTALL_PROGRAMS} PROPERTIES INSTALL_RPATH "\$ORIGIN/${_qaic_bin_to_lib}")

# qaic-compile is the newer name of qaic-exec: the same program, under both names in bin/.
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/bin/qaic-compile
  COMMAND ${CMAKE_COMMAND} -E create_symlink qaic-exec ${CMAKE_BINARY_DIR}/bin/qaic-compile
  DEPENDS qaic-exec
  VERBATIM)
add_custom_target(qaic-compile ALL DEPENDS ${CMAKE_BINARY_DIR}/bin/qaic-compile)

# --- runtime and dev ---------------------------------------------------------------------------
install(TARGETS qaic
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/libqaic/include/qaic
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

# qaic.pc and the CMake package are relocatable: they find the prefix from where they lie, so
# `cmake --install --prefix` anywhere gives files that point at that prefix.
file(RELATIVE_PATH QAIC_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" QAIC_PC_TO_PREFIX "${QAIC_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/deploy/pkgconfig/qaic.pc.in ${CMAKE_BINARY_DIR}/install/qaic.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/qaic.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

set(QAIC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qaic)
configure_package_config_file(${PROJECT_SOURCE_DIR}/deploy/cmake/qaicConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/qaicConfig.cmake
  INSTALL_DESTINATION ${QAIC_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/qaicConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/qaicConfig.cmake ${CMAKE_BINARY_DIR}/install/qaicConfigVersion.cmake
  DESTINATION ${QAIC_CMAKE_DIR} COMPONENT dev)

# --- programs ------------------------------------------------------------------------------------
install(TARGETS ${QAIC_INSTALL_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(FILES ${CMAKE_BINARY_DIR}/bin/qaic-compile DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(TARGETS ${QAIC_INSTALL_EMULATOR} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT emulator)
install(TARGETS ${QAIC_INSTALL_DAEMON} RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT daemon)

install(FILES ${PROJECT_SOURCE_DIR}/udev/70-qaic.rules DESTINATION lib/udev/rules.d COMPONENT tools)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools
  FILES_MATCHING PATTERN "*.md")
# Python byte code left by running an example in the tree is not part of the example.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/consumer ${PROJECT_SOURCE_DIR}/examples/llm DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
  COMPONENT dev PATTERN "__pycache__" EXCLUDE)

# --- python: qaicrt, qaicrt.pyi and the qaic package ---------------------------------------------
# Into Debian's path for the prefix, chosen when installing (cmake/PythonSite.cmake). Both of its
# answers lie two levels below lib/, so one RPATH finds libqaic.so.1 from either.
install(CODE "
  include(\"${PROJECT_SOURCE_DIR}/cmake/PythonSite.cmake\")
  qaic_python_site(\"\${CMAKE_INSTALL_PREFIX}\" ${QAIC_PYTHON_VERSION} QAIC_PYTHON_SITE)" COMPONENT python)
file(RELATIVE_PATH _qaic_site_to_lib "/prefix/lib/python3/dist-packages" "/prefix/${CMAKE_INSTALL_LIBDIR}")
# The second entry serves the module linked from /opt/qti-aic/dev/lib/<machine> (make
# install-compat), where a libqaic.so.1 link lies beside it: $ORIGIN is the link's directory.
set_target_properties(qaicrt PROPERTIES INSTALL_RPATH "\$ORIGIN/${_qaic_site_to_lib};\$ORIGIN")
install(TARGETS qaicrt LIBRARY DESTINATION "\${QAIC_PYTHON_SITE}" COMPONENT python)
foreach(file IN LISTS QAIC_PYTHON_SOURCES)
  get_filename_component(_qaic_python_subdir "${file}" DIRECTORY)
  install(FILES ${QAIC_PYTHON_SOURCE_DIR}/${file} DESTINATION "\${QAIC_PYTHON_SITE}/${_qaic_python_subdir}"
          COMPONENT python)
endforeach()
# The vendor's IO descriptor messages beside qaicrt, where vendor code imports them.
install(FILES ${QAIC_PYTHON_GENERATED} DESTINATION "\${QAIC_PYTHON_SITE}" COMPONENT python)

# --- man pages (cmake/ManPages.cmake builds them from each program's --help) ---------------------
include(${CMAKE_CURRENT_LIST_DIR}/ManPages.cmake)
qaic_man_page(qaic-runner 1 tools "run a compiled program on a Cloud AI 100 device")
qaic_man_page(qaic-util 1 tools "query Cloud AI 100 devices, partitions and program containers")
qaic_man_page(qaic-exec 1 tools "compile a network into a Cloud AI 100 program container")
qaic_man_page(lightnet 1 tools "run a LightNet JSON IR network on the host")
qaic_man_page(qaic-emu 1 emulator "emulated Cloud AI 100 devices and qaic kernel driver over FUSE")
qaic_man_page(qaicd 8 daemon "Cloud AI 100 device partitions and leases")
qaic_man_page_alias(qaic-compile qaic-exec 1 tools)

# --- files whose contents name the prefix (systemd units, the emulator's configuration) ----------
# Written at install time, so that `cmake --install --prefix P` and DESTDIR both give units whose
# ExecStart names P. The staging directory is per prefix and DESTDIR, so installs into different
# prefixes from one build tree do not share it.
set(QAIC_SYSTEMD_UNIT_DIR lib/systemd/system)
function(qaic_install_configured template name destination component)
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(QAIC_SYSCONFDIR /etc)
    else()
      set(QAIC_SYSCONFDIR \"\${CMAKE_INSTALL_PREFIX}/etc\")
    endif()
    set(QAIC_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    set(QAIC_SBINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}\")
    string(MD5 _stage \"\$ENV{DESTDIR}|\${CMAKE_INSTALL_PREFIX}\")
    set(_staged \"${CMAKE_BINARY_DIR}/install/staged-\${_stage}/${name}\")
    configure_file(\"${template}\" \"\${_staged}\" @ONLY)
    if(\"${destination}\" STREQUAL \"SYSCONF\")
      set(_destination \"\${QAIC_SYSCONFDIR}/qaic-emu\")
    else()
      set(_destination \"\${CMAKE_INSTALL_PREFIX}/${destination}\")
    endif()
    file(INSTALL DESTINATION \"\${_destination}\" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
         FILES \"\${_staged}\")
  " COMPONENT ${component})
endfunction()
qaic_install_configured(${PROJECT_SOURCE_DIR}/deploy/systemd/qaicd.service.in qaicd.service
  ${QAIC_SYSTEMD_UNIT_DIR} daemon)
qaic_install_configured(${PROJECT_SOURCE_DIR}/deploy/systemd/qaicd.socket.in qaicd.socket
  ${QAIC_SYSTEMD_UNIT_DIR} daemon)
qaic_install_configured(${PROJECT_SOURCE_DIR}/deploy/systemd/qaic-emu@.service.in qaic-emu@.service
  ${QAIC_SYSTEMD_UNIT_DIR} emulator)
qaic_install_configured(${PROJECT_SOURCE_DIR}/deploy/systemd/default.json default.json SYSCONF emulator)

# --- make install-compat (cmake/Compat.cmake): the names it needs from this tree -----------------
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/install/compat-names.cmake CONTENT
  "set(QAIC_COMPAT_MODULE \"$<TARGET_FILE_NAME:qaicrt>\")
set(QAIC_PYTHON_VERSION \"${QAIC_PYTHON_VERSION}\")
set(QAIC_COMPAT_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
")

# --- make uninstall: every file the last install listed in install_manifest.txt ------------------
# (and the links of make install-compat, when it was run: install_compat_manifest.txt)
add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND} -DMODE=uninstall -DBUILD=${CMAKE_BINARY_DIR} -DOPTIONAL=ON
          -P ${CMAKE_CURRENT_LIST_DIR}/Compat.cmake
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt
          -P ${CMAKE_CURRENT_LIST_DIR}/Uninstall.cmake
  COMMENT "Removing the files of the last install (install_manifest.txt, install_compat_manifest.txt)"
  VERBATIM)
