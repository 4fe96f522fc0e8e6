# Debian packages of the install components (cmake/dnstransport_install.cmake), built with
# `cpack -G DEB` in a build tree (tools/dev package):
#   dnstransport         the command, dnstransport(1) and its bash completion
#   libdnstransport-dev  the library (static), its headers and its CMake package
# The command's dependencies on shared libraries come from dpkg-shlibdeps (dpkg-dev); the
# library's from the -dev packages its CMake package finds (dnstransportConfig.cmake.in).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dnstransport)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
# Installs with CMAKE_INSTALL_DO_STRIP: the command is stripped (install(TARGETS) strips
# executables and shared libraries; the static library keeps its symbols).
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL tool dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER
  "dnstransport maintainers <maintainers@users.noreply.a-seed-d3b65f1c.example>")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_TOOL_PACKAGE_NAME dnstransport)
set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOL_PACKAGE_SHLIBDEPS ON)
# Each package's description: its summary line, then the text (CPack indents it, and an
# empty line becomes the " ." of a new paragraph). Empty: CPack would put the project's
# DESCRIPTION before each package's summary.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_DEBIAN_TOOL_DESCRIPTION
  "DNS load generator over UDP, TCP, DNS over TLS, HTTPS and QUIC
dnstransport measures what a DNS server can do over UDP, TCP, DNS over TLS,
DNS over HTTPS and DNS over QUIC: throughput, latency percentiles, and what
each connection and handshake costs the server, with sweeps over clients and
queries per connection, reports in HTML, open-loop searches and monitoring of
the server's CPU and memory.")

set(dnstransport_dev_depends
  "libboost1.81-dev, libboost-json1.81-dev, libfmt-dev, libssl-dev, libnghttp2-dev, libpcap-dev, pkg-config")
if(DNSTRANSPORT_WITH_GNUTLS)
  string(APPEND dnstransport_dev_depends
    ", libgnutls28-dev, libngtcp2-dev, libngtcp2-crypto-gnutls-dev")
endif()
if(DNSTRANSPORT_HAVE_MPI)
  string(APPEND dnstransport_dev_depends ", libopenmpi-dev")
endif()
if(DNSTRANSPORT_HAVE_XDP)
  string(APPEND dnstransport_dev_depends ", libxdp-dev, libbpf-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdnstransport-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${dnstransport_dev_depends}")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "DNS load generation library over UDP, TCP, DoT, DoH and DoQ (development)
The library behind the dnstransport command: loads, sweeps and searches over
UDP, TCP, DNS over TLS, DNS over HTTPS and DNS over QUIC, blocking or in
Asio's asynchronous style, with their results, reports and cost models.

This package holds the static library, its headers and its CMake package
(find_package(dnstransport)).")

# The changelog Debian wants in each package's documentation directory, compressed as its
# tools do it (gzip -9n: no name or time stamp, so the file is the same every build).
configure_file("${PROJECT_SOURCE_DIR}/cmake/debian-changelog.in"
  "${PROJECT_BINARY_DIR}/debian/changelog" @ONLY)
execute_process(COMMAND gzip -9n -c "${PROJECT_BINARY_DIR}/debian/changelog"
  OUTPUT_FILE "${PROJECT_BINARY_DIR}/debian/changelog.gz" COMMAND_ERROR_IS_FATAL ANY)
install(FILES "${PROJECT_BINARY_DIR}/debian/changelog.gz"
  DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/dnstransport" COMPONENT tool)
install(FILES "${PROJECT_BINARY_DIR}/debian/changelog.gz"
  DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/libdnstransport-dev" COMPONENT dev)

include(CPack)
