# cmake/man.cmake — man pages generated from the public headers' comments
# (tools/gen-man.py): one page in section 3 per public function, an
# overview in section 7 per header, swarmrun(1) from tools/swarmrun's
# opening comment. Built into ${CMAKE_BINARY_DIR}/man by the `man` target
# (part of `all`), installed with the dev (3, 7) and dropin (1) components.
# Needs python3 only; without it no pages are made and none installed.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "man: no python3 - no man pages")
  return()
endif()
set(SWARM_MAN_DIR ${CMAKE_BINARY_DIR}/man)
file(GLOB SWARM_PUBLIC_HEADERS ${PROJECT_SOURCE_DIR}/include/swarm.h
     ${PROJECT_SOURCE_DIR}/include/swarm/*.h)
add_custom_command(OUTPUT ${SWARM_MAN_DIR}/stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${SWARM_MAN_DIR}/man1 ${SWARM_MAN_DIR}/man3 ${SWARM_MAN_DIR}/man7
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/gen-man.py
          --out ${SWARM_MAN_DIR} --version ${PROJECT_VERSION}
          ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/tools/swarmrun
  COMMAND ${CMAKE_COMMAND} -E touch ${SWARM_MAN_DIR}/stamp
  DEPENDS ${PROJECT_SOURCE_DIR}/tools/gen-man.py ${SWARM_PUBLIC_HEADERS}
          ${PROJECT_SOURCE_DIR}/tools/swarmrun
  COMMENT "man pages from the headers' comments")
add_custom_target(man ALL DEPENDS ${SWARM_MAN_DIR}/stamp)
install(DIRECTORY ${SWARM_MAN_DIR}/man3 ${SWARM_MAN_DIR}/man7
  DESTINATION ${CMAKE_INSTALL_MANDIR} COMPONENT dev)
install(DIRECTORY ${SWARM_MAN_DIR}/man1
  DESTINATION ${CMAKE_INSTALL_MANDIR} COMPONENT dropin)
