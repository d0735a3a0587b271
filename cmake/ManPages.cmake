# SPDX-License-Identifier: Apache-2.0
# Man pages built from each program's own --help and --version by help2man (Debian's help2man),
# so that the man page says exactly what --help says; the README carries the same text between
# markers, and tests/install/test_docs.py fails when the three disagree.
#   qaic_man_page(<program> <section> <component> "<one-line summary>")
#   qaic_man_page_alias(<name> <program> <section> <component>)   a symlink to <program>'s page
find_program(HELP2MAN help2man REQUIRED)

# A fixed date keeps the pages reproducible: the last commit's when the build tree was first
# configured, kept in the cache so that later commits do not change the pages' rules (which would
# make the Makefile generator throw the built pages away on every reconfigure).
if(NOT QAIC_SOURCE_DATE_EPOCH)
  execute_process(COMMAND git log -1 --format=%ct WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE _qaic_epoch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT _qaic_epoch)
    string(TIMESTAMP _qaic_epoch "%s")
  endif()
  set(QAIC_SOURCE_DATE_EPOCH ${_qaic_epoch} CACHE STRING "Date of the man pages (seconds since 1970)")
endif()

add_custom_target(man-pages ALL)

function(qaic_man_page program section component summary)
  set(page ${CMAKE_BINARY_DIR}/man/man${section}/${program}.${section})
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man/man${section}
    COMMAND ${CMAKE_COMMAND} -E env SOURCE_DATE_EPOCH=${QAIC_SOURCE_DATE_EPOCH} QAIC_ROOT=/nonexistent
            ${HELP2MAN} --no-info --section=${section} --name=${summary} --source=qaic-stack
            --help-option=--help --version-option=--version --output=${page} $<TARGET_FILE:${program}>
    DEPENDS ${program}
    COMMENT "Man page ${program}(${section}) from ${program} --help"
    VERBATIM)
  add_custom_target(man-${program} DEPENDS ${page})
  add_dependencies(man-pages man-${program})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endfunction()

function(qaic_man_page_alias name program section component)
  set(link ${CMAKE_BINARY_DIR}/man/man${section}/${name}.${section})
  add_custom_command(OUTPUT ${link}
    COMMAND ${CMAKE_COMMAND} -E create_symlink ${program}.${section} ${link}
    DEPENDS ${CMAKE_BINARY_DIR}/man/man${section}/${program}.${section}
    VERBATIM)
  add_custom_target(man-${name} DEPENDS ${link})
  add_dependencies(man-pages man-${name})
  install(FILES ${link} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endfunction()
