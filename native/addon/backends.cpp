// The engine's backends at run time (GGML_BACKEND_DL builds, native/CMakeLists.txt REPOSNAP_PORTABLE):
// the CPU variant ggml picks for this CPU (ggml_backend_load_all_from_path → ggml_backend_load_best,
// ggml-backend-reg.cpp, by each module's ggml_backend_score), RPC, and the GPU modules that
// REPOSNAP_BACKEND allows (ggml_backend_load). The folder is the addon's own, found from the address
// of this code (dladdr / GetModuleHandleExW): the engine runs wherever it was unpacked.
#include "backends.h"

#include "ggml-backend.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#ifdef _WIN32
#    define WIN32_LEAN_AND_MEAN
#    include <windows.h>
#else
#    include <dlfcn.h>
#endif

namespace reposnap_addon {

namespace {

BackendLoad g_load;

#ifdef _WIN32
const char * const MODULE_PREFIX = "";
const char * const MODULE_EXT    = ".dll";

std::string utf8(const std::wstring & w) {
    if (w.empty()) {
        return {};
    }
    const int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), (int) w.size(), nullptr, 0, nullptr, nullptr);
    std::string s(n, '\0');
    WideCharToMultiByte(CP_UTF8, 0, w.data(), (int) w.size(), s.data(), n, nullptr, nullptr);
    return s;
}
#else
const char * const MODULE_PREFIX = "lib";
const char * const MODULE_EXT    = ".so"; // CMake MODULE libraries are .so on macOS too
#endif

// the folder of the file this code was loaded from (reposnap.node), UTF-8; "" when it cannot be told
std::string addon_dir() {
#ifdef _WIN32
    HMODULE h = nullptr;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            reinterpret_cast<LPCWSTR>(&addon_dir), &h)) {
        return {};
    }
    std::wstring buf(32768, L'\0');
    const DWORD n = GetModuleFileNameW(h, buf.data(), (DWORD) buf.size());
    if (n == 0) {
        return {};
    }
    buf.resize(n);
    return utf8(std::filesystem::path(buf).parent_path().wstring());
#else
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&addon_dir), &info) || !info.dli_fname) {
        return {};
    }
    return std::filesystem::path(info.dli_fname).parent_path().string();
#endif
}

// why `file` cannot be loaded (the dynamic loader's message), or "" when it can
std::string try_open(const std::string & file) {
#ifdef _WIN32
    HMODULE h = LoadLibraryExW(std::filesystem::u8path(file).wstring().c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!h) {
        return "LoadLibrary failed with error " + std::to_string(GetLastError());
    }
    FreeLibrary(h);
    return {};
#else
    void * h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char * e = dlerror();
        return e ? e : "dlopen failed";
    }
    dlclose(h);
    return {};
#endif
}

// loads one GPU module; a note says why it is not used when it is not
void load_gpu(const std::string & name, const std::string & gpu_dir, bool asked) {
    const std::string file = (std::filesystem::u8path(gpu_dir) / (std::string(MODULE_PREFIX) + "ggml-" + name + MODULE_EXT)).u8string();
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::u8path(file), ec)) {
        if (asked) {
            g_load.notes.push_back(name + ": this engine has no " + name + " backend (" + file + " is missing)");
        }
        return;
    }
    const std::string why = try_open(file);
    if (!why.empty()) {
        g_load.notes.push_back(name + ": the " + name + " backend could not be loaded (" + why + ")");
        return;
    }
    ggml_backend_reg_t reg = nullptr;
    try {
        reg = ggml_backend_load(file.c_str());
    } catch (const std::exception & e) {
        g_load.notes.push_back(name + ": the " + name + " backend failed to initialise (" + e.what() + ")");
        return;
    } catch (...) {
        g_load.notes.push_back(name + ": the " + name + " backend failed to initialise");
        return;
    }
    if (!reg) {
        g_load.notes.push_back(name + ": the " + name + " backend failed to initialise (see REPOSNAP_VERBOSE=1)");
        return;
    }
    if (ggml_backend_reg_dev_count(reg) == 0) {
        g_load.notes.push_back(name + ": the " + name + " backend found no device");
        ggml_backend_unload(reg);
        return;
    }
    g_load.loaded.push_back(file);
}

// the VARIANT feature of the CPU backend (patch 0011), "" without one
std::string cpu_variant() {
    ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU");
    if (!cpu) {
        return {};
    }
    auto get = (ggml_backend_get_features_t) ggml_backend_reg_get_proc_address(cpu, "ggml_backend_get_features");
    if (!get) {
        return {};
    }
    for (ggml_backend_feature * f = get(cpu); f && f->name; ++f) {
        if (std::strcmp(f->name, "VARIANT") == 0) {
            return f->value;
        }
    }
    return {};
}

} // namespace

void load_backends() {
    const char * r = getenv("REPOSNAP_BACKEND");
    g_load.request = r && *r ? r : "auto";
#ifdef GGML_BACKEND_DL
    g_load.dynamic = true;
    g_load.dir = addon_dir();
    const std::string gpu_dir = (std::filesystem::u8path(g_load.dir) / "gpu").u8string();
    if (g_load.request == "auto") {
        for (const char * g : { "cuda", "vulkan", "metal" }) {
            load_gpu(g, gpu_dir, false);
        }
    } else if (g_load.request == "cuda" || g_load.request == "vulkan" || g_load.request == "metal") {
        load_gpu(g_load.request, gpu_dir, true);
    } else if (g_load.request != "cpu") {
        g_load.notes.push_back("REPOSNAP_BACKEND='" + g_load.request + "' is not one of auto, cpu, cuda, vulkan, metal: using the CPU");
    }
    ggml_backend_load_all_from_path(g_load.dir.empty() ? nullptr : g_load.dir.c_str());
    if (!ggml_backend_reg_by_name("CPU")) {
        // llama_model_load then fails ("no backends"); this says why
        g_load.notes.push_back("cpu: no CPU backend in " + g_load.dir + " (its " + MODULE_PREFIX + "ggml-cpu-*" + MODULE_EXT + " files are missing, or none runs on this CPU)");
    }
#endif
    g_load.cpu_variant = cpu_variant();
}

const BackendLoad & backend_load() { return g_load; }

} // namespace reposnap_addon
