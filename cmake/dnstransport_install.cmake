# Install rules and the package config that makes find_package(dnstransport) work.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DNSTRANSPORT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dnstransport")

install(TARGETS dnstransport
  EXPORT dnstransport-targets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/lib/include/dnstransport"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
if(DNSTRANSPORT_BUILD_TOOLS)
  install(TARGETS dnstransport_cli RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()
install(EXPORT dnstransport-targets
  NAMESPACE dnstransport::
  DESTINATION "${DNSTRANSPORT_CMAKE_DIR}")

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
  DESTINATION "${DNSTRANSPORT_CMAKE_DIR}")
