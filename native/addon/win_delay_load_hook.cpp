// Windows only: the addon imports N-API from "node.exe" through a delay-loaded import library
// (native/CMakeLists.txt NODE_IMPORT_LIB). When that import is first used, this hook hands the
// delay-load helper the process's own executable instead of loading a file named node.exe, so the
// addon works in any host that exports N-API: node.exe under any name, or Electron (VS Code's
// extension host, Code.exe). The same as node-gyp's win_delay_load_hook.cc.
#ifdef _WIN32
#    ifndef WIN32_LEAN_AND_MEAN
#        define WIN32_LEAN_AND_MEAN
#    endif
#    include <windows.h>
#    include <delayimp.h>
#    include <cstring>

namespace {

FARPROC WINAPI load_exe_hook(unsigned int event, DelayLoadInfo * info) {
    if (event != dliNotePreLoadLibrary || !info || !info->szDll || _stricmp(info->szDll, "node.exe") != 0) {
        return nullptr;
    }
    return reinterpret_cast<FARPROC>(GetModuleHandleW(nullptr));
}

} // namespace

// (extern "C" from delayimp.h)
PfnDliHook __pfnDliNotifyHook2 = load_exe_hook;
#endif
