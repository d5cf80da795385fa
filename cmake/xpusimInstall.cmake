# cmake --install: the xpusim binary, the layer libraries with their headers and an exported
# CMake package (find_package(xpusim) -> xpusim::core, xpusim::predict, ...), and the configs
# under share/xpusim/configs, where an installed binary looks for them (common/config_paths.cpp).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(XPUSIM_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/xpusim")
set(XPUSIM_INSTALL_CONFIGS "${CMAKE_INSTALL_DATADIR}/xpusim/configs")
set(XPUSIM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/xpusim")

# Exported names drop the prefix: xpusim_predict -> xpusim::predict.
set(xpusim_export_targets xpusim_common xpusim_onnx xpusim_models xpusim_engine_api xpusim_parallel xpusim_core xpusim_dnnl
    xpusim_analytical xpusim_tpu_config xpusim_tpu xpusim_cpu xpusim_predict xpusim_costmodel xpusim_validation xpusim_sweep)
if(XPUSIM_HAVE_CUDA)
  list(APPEND xpusim_export_targets xpusim_cuda_host xpusim_cuda)
endif()
foreach(t IN LISTS xpusim_export_targets)
  string(REGEX REPLACE "^xpusim_" "" short "${t}")
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS ${xpusim_export_targets} EXPORT xpusimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${XPUSIM_INSTALL_INCLUDEDIR})
# The binary links CUDA (and any library outside the system paths) from where it was found.
set_target_properties(xpusim PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS xpusim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The engine modules, where the installed binary looks for them (predict/engine_module.cpp).
install(TARGETS xpusim_tpu_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/xpusim)
if(TARGET xpusim_mpi_transport)
  install(TARGETS xpusim_mpi_transport LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/xpusim)
endif()
if(XPUSIM_HAVE_CUDA)
  install(TARGETS xpusim_cuda_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/xpusim)
endif()

# Headers keep their layer folders (#include "models/zoo.hpp") under include/xpusim/.
install(DIRECTORY common models engine parallel devices sim predict costmodel validation sweep
        DESTINATION ${XPUSIM_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh"
        PATTERN "measured" EXCLUDE)
install(DIRECTORY configs/ DESTINATION ${XPUSIM_INSTALL_CONFIGS})

install(EXPORT xpusimTargets NAMESPACE xpusim:: DESTINATION ${XPUSIM_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/xpusimConfig.cmake.in ${PROJECT_BINARY_DIR}/xpusimConfig.cmake
                              INSTALL_DESTINATION ${XPUSIM_INSTALL_CMAKEDIR}
                              PATH_VARS XPUSIM_INSTALL_CONFIGS)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xpusimConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xpusimConfig.cmake ${PROJECT_BINARY_DIR}/xpusimConfigVersion.cmake
        DESTINATION ${XPUSIM_INSTALL_CMAKEDIR})
