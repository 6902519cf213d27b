# CMake toolchain for the win32-x64 engine, cross-compiled on Debian with mingw-w64
# (native/cross/win32-x64.sh passes it to native/build.mjs in REPOSNAP_CMAKE_ARGS).
# The posix threads variant of mingw's gcc (x86_64-w64-mingw32-g++-posix): std::thread and
# std::mutex, which llama.cpp and the addon use, need it (the win32 variant has neither).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(REPOSNAP_MINGW x86_64-w64-mingw32)
set(CMAKE_C_COMPILER   ${REPOSNAP_MINGW}-gcc-posix)
set(CMAKE_CXX_COMPILER ${REPOSNAP_MINGW}-g++-posix)
set(CMAKE_RC_COMPILER  ${REPOSNAP_MINGW}-windres)
set(CMAKE_AR           ${REPOSNAP_MINGW}-ar CACHE FILEPATH "")
set(CMAKE_RANLIB       ${REPOSNAP_MINGW}-ranlib CACHE FILEPATH "")

set(CMAKE_FIND_ROOT_PATH /usr/${REPOSNAP_MINGW})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
