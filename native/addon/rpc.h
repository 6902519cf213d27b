// RepoSnap addon: llama.cpp's RPC backend (rpc.cpp): the devices of RPC servers for model loading,
// and startRpcServer(), which serves this build's CPU backend.
#pragma once

#include "common.h"

#include <string>
#include <vector>

namespace reposnap_addon {

// exit code of an engine process that lost an RPC server its model's layers live on (ggml-rpc
// aborts on a lost connection; the abort callback prints "[rpc:lost] …" and exits with this code)
constexpr int RPC_LOST_EXIT_CODE = 69; // EX_UNAVAILABLE

// "host:port" → host, port (port 1-65535; no IPv6 literal, as ggml-rpc's parse_endpoint); false when malformed
bool split_endpoint(const std::string & endpoint, std::string & host, std::string & port);

// Runs llama.cpp's RPC handshake with each server ourselves (ggml-rpc would abort the process), then
// connects them (ggml_backend_rpc_add_server) and returns their devices, in order, for
// llama_model_params.devices. Installs the abort callback that reports a lost server.
// Throws std::runtime_error "[rpc:<code>] message": endpoint (malformed), unreachable (refused,
// timed out, unknown host), busy (no handshake answer: the server serves another client), version
// (another protocol version). Call on a worker thread (it blocks up to 15 s per server).
std::vector<ggml_backend_dev_t> rpc_devices(const std::vector<std::string> & endpoints);

// startRpcServer({ host = "127.0.0.1", port = 50052, threads, cacheDir?, gpu? }): serves this engine's
// CPU backend (gpu: its GPU devices instead) with llama.cpp's RPC server on the calling thread; never
// returns while it serves; throws when it cannot listen, or gpu is asked of an engine without one.
Napi::Value StartRpcServer(const Napi::CallbackInfo & info);

} // namespace reposnap_addon
