# Writes generated/version.cpp from version.cpp.in with the commit the tree is at, at build time
# (a custom target runs it on every build). configure_file leaves the output untouched when the
# text is the same, so nothing recompiles until the commit changes.
# Inputs: -DSRC=<source dir> -DIN=<template> -DOUT=<output> -DPROJECT_VERSION=<x.y.z>
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE XPUSIM_GIT_HASH OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR XPUSIM_GIT_HASH STREQUAL "")
  set(XPUSIM_GIT_HASH "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
