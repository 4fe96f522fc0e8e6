# Install rules and the package config that makes find_package(dnstransport) work.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DNSTRANSPORT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dnstransport")

# Two components, the two Debian packages of cmake/dnstransport_package.cmake: `tool` (the
# command, its manual page and completion) and `dev` (the library, headers, CMake package).
install(TARGETS dnstransport
  EXPORT dnstransport-targets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT dev
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/lib/include/dnstransport"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT dev)
if(DNSTRANSPORT_BUILD_TOOLS)
  install(TARGETS dnstransport_cli RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT tool)
  install(FILES "${DNSTRANSPORT_MANUAL_PAGE}.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1"
    COMPONENT tool)
  # Where bash-completion looks for a command's completion when it is first needed.
  install(FILES "${DNSTRANSPORT_BASH_COMPLETION}"
    DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" RENAME dnstransport
    COMPONENT tool)
endif()
install(EXPORT dnstransport-targets
  NAMESPACE dnstransport::
  DESTINATION "${DNSTRANSPORT_CMAKE_DIR}" COMPONENT dev)

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/dnstransportConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/dnstransportConfig.cmake"
  INSTALL_DESTINATION "${DNSTRANSPORT_CMAKE_DIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/dnstransportConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/dnstransportConfig.cmake"
  "${PROJECT_BINARY_DIR}/dnstransportConfigVersion.cmake"
  DESTINATION "${DNSTRANSPORT_CMAKE_DIR}" COMPONENT dev)

include(dnstransport_package)
