// Which ggml backends the engine loads at start-up, and from where (see backends.cpp).
#pragma once

#include <string>
#include <vector>

namespace reposnap_addon {

// What load_backends() did, for backends() / backendLoad() and the logs.
struct BackendLoad {
    bool        dynamic = false; // a GGML_BACKEND_DL build (modules loaded at run time)
    std::string dir;             // the addon's folder: CPU variants and RPC are looked for here, GPU modules in dir/gpu
    std::string request;         // REPOSNAP_BACKEND: auto (default), cpu, cuda, vulkan or metal
    std::string cpu_variant;     // the CPU module ggml chose (its VARIANT feature, e.g. "haswell"); "" in a static build
    std::vector<std::string> loaded; // GPU modules registered (file paths)
    std::vector<std::string> notes;  // one line for each GPU module that was asked for or found but is not used, with the reason
};

// Loads the backends once per process (called by backend_init, after llama_backend_init):
//  - GPU modules from <dir>/gpu (lib)ggml-<cuda|vulkan|metal>.(so|dll|dylib): with REPOSNAP_BACKEND=auto
//    every one present, with =<gpu> that one (its absence is a note), with =cpu none;
//    one that cannot be loaded (a missing driver library) or finds no device is a note;
//  - ggml_backend_load_all_from_path(<dir>): the best CPU variant the CPU supports (ggml_backend_score), and RPC.
// A static build (no GGML_BACKEND_DL) registers its backends at link time: nothing to load.
void load_backends();

// The result of load_backends() (valid after backend_init()).
const BackendLoad & backend_load();

} // namespace reposnap_addon
