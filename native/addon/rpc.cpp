// RepoSnap addon: llama.cpp's RPC backend (ggml-rpc, built in by native/build.mjs with GGML_RPC=ON).
// rpc_devices(): the devices of `reposnap rpc-server`s, for llama_model_params.devices (model.cpp),
// after our own handshake with each server, because ggml-rpc aborts the process on a server it cannot
// reach or whose protocol version differs; StartRpcServer(): serves this build's CPU or GPUs (blocks).
// A server lost once layers live on it makes ggml-rpc abort (RPC_STATUS_ASSERT): the abort callback
// installed here says so and exits with RPC_LOST_EXIT_CODE instead of dumping core.
#ifdef _WIN32
// Winsock before anything that may include windows.h; Vista+ for WSAPoll
#    ifndef WIN32_LEAN_AND_MEAN
#        define WIN32_LEAN_AND_MEAN
#    endif
#    if !defined(_WIN32_WINNT) || _WIN32_WINNT < 0x0600
#        undef _WIN32_WINNT
#        define _WIN32_WINNT 0x0602
#    endif
#    include <winsock2.h>
#    include <ws2tcpip.h>
#endif

#include "rpc.h"

#include "ggml-backend.h"
#include "ggml-rpc.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef _WIN32
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace reposnap_addon {

namespace {

// ggml-rpc's wire format of the handshake (ggml/src/ggml-rpc/ggml-rpc.cpp: RPC_CMD_HELLO, always 14;
// rpc_msg_hello_req/rsp, RPC_CONN_CAPS_SIZE = 24 in transport.h)
constexpr uint8_t RPC_CMD_HELLO_ID        = 14;
constexpr uint8_t RPC_CMD_DEVICE_COUNT_ID = 15; // rpc_msg_device_count_rsp: uint32_t device_count
constexpr size_t  RPC_CAPS_SIZE           = 24;
// the most devices a server may report (patch 0013's RPC_MAX_DEVICES: ggml-rpc refuses more too)
constexpr uint32_t RPC_MAX_DEVICES = 64;
struct hello_rsp {
    uint8_t major, minor, patch, padding;
    uint8_t caps[RPC_CAPS_SIZE];
};
static_assert(sizeof(hello_rsp) == 28, "ggml-rpc's rpc_msg_hello_rsp");

constexpr int CONNECT_TIMEOUT_MS = 5000;
constexpr int HELLO_TIMEOUT_MS   = 10000;

// a function of the RPC backend by name (ggml_backend_reg_get_proc_address): in a portable build the
// backend is a module (libggml-rpc) that the addon does not link, in a static one it is linked in
template <typename Fn>
Fn rpc_fn(const char * name) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("RPC");
    void * fn = reg ? ggml_backend_reg_get_proc_address(reg, name) : nullptr;
    if (!fn) {
        throw std::runtime_error(std::string("[rpc:unavailable] this engine has no RPC backend (") + name + " not found: the libggml-rpc library is missing beside reposnap.node)");
    }
    return reinterpret_cast<Fn>(fn);
}

std::mutex g_mutex;
std::vector<std::string> g_endpoints; // every endpoint a model of this process was loaded on

std::string proto_version(int major, int minor, int patch) {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string start_hint(const std::string & port) {
    return "start it with `reposnap rpc-server --port " + port + "`";
}

[[noreturn]] void fail(const char * code, const std::string & msg) {
    throw std::runtime_error(std::string("[rpc:") + code + "] " + msg);
}

// the few socket calls the handshake needs, the same on POSIX and Winsock
#ifdef _WIN32
using sock_t = SOCKET;
const sock_t NO_SOCK = INVALID_SOCKET;
using pollfd_t = WSAPOLLFD;
using io_len_t = int;

// Winsock's one-time start (ggml-rpc starts its own too; the calls are counted and harmless)
void sock_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        WSADATA wsa;
        WSAStartup(MAKEWORD(2, 2), &wsa);
    });
}
int sock_errno() { return WSAGetLastError(); }
void sock_close(sock_t fd) { closesocket(fd); }
bool sock_nonblocking(sock_t fd) {
    u_long on = 1;
    return ioctlsocket(fd, FIONBIO, &on) == 0;
}
int sock_poll(pollfd_t * p, int timeout_ms) { return WSAPoll(p, 1, timeout_ms); }
bool err_interrupted(int e) { return e == WSAEINTR; }
bool err_again(int e) { return e == WSAEWOULDBLOCK || e == WSAEINTR; }
bool err_in_progress(int e) { return e == WSAEWOULDBLOCK || e == WSAEINPROGRESS; }
bool err_refused(int e) { return e == WSAECONNREFUSED; }
std::string err_text(int e) {
    char buf[256] = {};
    const DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, (DWORD) e, 0, buf, sizeof(buf), nullptr);
    std::string s(buf, n);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '.')) {
        s.pop_back();
    }
    return s.empty() ? "socket error " + std::to_string(e) : s;
}
const int SEND_FLAGS = 0; // no SIGPIPE on Windows
#else
using sock_t = int;
const sock_t NO_SOCK = -1;
using pollfd_t = pollfd;
using io_len_t = size_t;

void sock_init() {}
int sock_errno() { return errno; }
void sock_close(sock_t fd) { close(fd); }
bool sock_nonblocking(sock_t fd) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0; }
int sock_poll(pollfd_t * p, int timeout_ms) { return poll(p, 1, timeout_ms); }
bool err_interrupted(int e) { return e == EINTR; }
bool err_again(int e) { return e == EINTR || e == EAGAIN; }
bool err_in_progress(int e) { return e == EINPROGRESS; }
bool err_refused(int e) { return e == ECONNREFUSED; }
std::string err_text(int e) { return strerror(e); }
const int SEND_FLAGS = MSG_NOSIGNAL;
#endif

// waits until fd is ready for `events` or timeout_ms passes; false on timeout
bool wait_fd(sock_t fd, short events, int timeout_ms) {
    pollfd_t p = {};
    p.fd = fd;
    p.events = events;
    int r;
    do {
        r = sock_poll(&p, timeout_ms);
    } while (r < 0 && err_interrupted(sock_errno()));
    return r > 0;
}

// reads exactly n bytes; 0 done, 1 timeout, 2 closed or failed
int read_all(sock_t fd, void * buf, size_t n, int timeout_ms) {
    auto * p = static_cast<uint8_t *>(buf);
    while (n > 0) {
        if (!wait_fd(fd, POLLIN, timeout_ms)) {
            return 1;
        }
        const auto r = recv(fd, reinterpret_cast<char *>(p), (io_len_t) n, 0);
        if (r < 0 && err_again(sock_errno())) {
            continue;
        }
        if (r <= 0) {
            return 2;
        }
        p += r;
        n -= (size_t) r;
    }
    return 0;
}

bool write_all(sock_t fd, const void * buf, size_t n) {
    auto * p = static_cast<const uint8_t *>(buf);
    while (n > 0) {
        if (!wait_fd(fd, POLLOUT, HELLO_TIMEOUT_MS)) {
            return false;
        }
        const auto r = send(fd, reinterpret_cast<const char *>(p), (io_len_t) n, SEND_FLAGS);
        if (r < 0 && err_again(sock_errno())) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        p += r;
        n -= (size_t) r;
    }
    return true;
}

// ggml-rpc's handshake with one server, then a clean close (the server serves the next client)
void probe(const std::string & endpoint, const std::string & host, const std::string & port) {
    sock_init();
    addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo * res = nullptr;
    const int gai = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    if (gai != 0 || !res) {
        fail("unreachable", "cannot reach RPC server " + endpoint + ": unknown host '" + host + "' (" + gai_strerror(gai) + ")");
    }
    sock_t fd = NO_SOCK;
    std::string why = "connection refused";
    for (addrinfo * a = res; a && fd == NO_SOCK; a = a->ai_next) {
#ifdef _WIN32
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
#else
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
#endif
        if (fd == NO_SOCK) {
            why = err_text(sock_errno());
            continue;
        }
        sock_nonblocking(fd);
        int r = connect(fd, a->ai_addr, (socklen_t) a->ai_addrlen);
        int err = r < 0 ? sock_errno() : 0;
        if (r < 0 && err_in_progress(err)) {
            // (WSAPoll reports a refused non-blocking connect as POLLERR|POLLHUP since Windows 10 2004;
            // before, it waited for the timeout: the message below then says "no answer")
            if (!wait_fd(fd, POLLOUT, CONNECT_TIMEOUT_MS)) {
                why = "no answer within " + std::to_string(CONNECT_TIMEOUT_MS / 1000) + " s (a firewall, or the wrong host)";
                sock_close(fd);
                fd = NO_SOCK;
                continue;
            }
            err = 0;
            socklen_t len = sizeof(err);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, reinterpret_cast<char *>(&err), &len);
            r = err ? -1 : 0;
        }
        if (r < 0) {
            why = err_refused(err) ? "connection refused" : err_text(err);
            sock_close(fd);
            fd = NO_SOCK;
        }
    }
    freeaddrinfo(res);
    if (fd == NO_SOCK) {
        fail("unreachable", "cannot reach RPC server " + endpoint + ": " + why + " — " + start_hint(port));
    }
    uint8_t req[1 + 8 + RPC_CAPS_SIZE] = {};
    req[0] = RPC_CMD_HELLO_ID;
    const uint64_t req_size = RPC_CAPS_SIZE;
    memcpy(req + 1, &req_size, 8);
    uint64_t rsp_size = 0;
    hello_rsp rsp = {};
    int r = write_all(fd, req, sizeof(req)) ? read_all(fd, &rsp_size, 8, HELLO_TIMEOUT_MS) : 2;
    if (r == 0 && rsp_size == sizeof(rsp)) {
        r = read_all(fd, &rsp, sizeof(rsp), HELLO_TIMEOUT_MS);
    }
    // then the device count, on the same connection, bounded (issue 29, item 9: a server that answered
    // 2^31 made ggml-rpc allocate device objects until the client ran out of memory)
    int rc = 2;
    uint64_t count_size = 0;
    uint32_t count = 0;
    if (r == 0 && rsp_size == sizeof(rsp) && rsp.major == RPC_PROTO_MAJOR_VERSION && rsp.minor <= RPC_PROTO_MINOR_VERSION) {
        uint8_t creq[1 + 8] = {RPC_CMD_DEVICE_COUNT_ID};
        rc = write_all(fd, creq, sizeof(creq)) ? read_all(fd, &count_size, 8, HELLO_TIMEOUT_MS) : 2;
        if (rc == 0 && count_size == sizeof(count)) {
            rc = read_all(fd, &count, sizeof(count), HELLO_TIMEOUT_MS);
        }
    }
    sock_close(fd);
    const std::string ours = proto_version(RPC_PROTO_MAJOR_VERSION, RPC_PROTO_MINOR_VERSION, RPC_PROTO_PATCH_VERSION);
    const std::string same_build = "start the server from this same RepoSnap build (`reposnap rpc-server --port " + port + "`) so that the versions match";
    if (r == 1) {
        fail("busy", "RPC server " + endpoint + " accepted the connection but did not answer llama.cpp's RPC handshake within " +
                     std::to_string(HELLO_TIMEOUT_MS / 1000) + " s: a server serves one client at a time, so another engine (a VS Code window, a `reposnap ask`) is probably using it; "
                     "stop that one or start another server");
    }
    if (r == 2 || rsp_size != sizeof(rsp)) {
        fail("version", "RPC server " + endpoint + " closed llama.cpp's RPC handshake (protocol " + ours +
                        " here): it is not a llama.cpp RPC server or speaks another protocol version; " + same_build);
    }
    // ggml-rpc's own check (negotiate_hello): the same major version, a server minor version not newer
    if (rsp.major != RPC_PROTO_MAJOR_VERSION || rsp.minor > RPC_PROTO_MINOR_VERSION) {
        fail("version", "RPC server " + endpoint + " speaks llama.cpp RPC protocol " + proto_version(rsp.major, rsp.minor, rsp.patch) +
                        ", this engine " + ours + " (llama.cpp requires the same major version and a server minor version not newer): " + same_build);
    }
    if (rc != 0 || count_size != sizeof(count)) {
        fail("reply", "RPC server " + endpoint + " answered the handshake but not the device count (" +
                      (rc == 1 ? "no answer within " + std::to_string(HELLO_TIMEOUT_MS / 1000) + " s" : "a malformed reply") + "): it is not a llama.cpp RPC server of this version");
    }
    if (count > RPC_MAX_DEVICES) {
        fail("reply", "RPC server " + endpoint + " reports " + std::to_string(count) + " devices (at most " + std::to_string(RPC_MAX_DEVICES) +
                      "): an invalid reply, so RepoSnap does not use it; it is not a llama.cpp RPC server, or not one you can trust");
    }
    if (count == 0) {
        fail("unreachable", "RPC server " + endpoint + " has no devices");
    }
}
void on_abort(const char * message) {
    const bool rpc = strstr(message, "RPC server") || strstr(message, "Failed to connect to") || strstr(message, "RPC handshake failed");
    if (!rpc) {
        // ggml's default: the message, then abort()
        fprintf(stderr, "%s\n", message);
        fflush(stderr);
        return;
    }
    std::string list;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        for (const auto & e : g_endpoints) {
            list += (list.empty() ? "" : ", ") + e;
        }
    }
    if (strstr(message, "invalid reply")) {
        // patch 0013: a count or size outside its bounds (an alignment of 0, a buffer smaller than asked)
        fprintf(stderr,
                "error: [rpc:reply] an RPC server (%s) sent an invalid reply, so this engine process stops using it and exits (code %d): "
                "it is not a llama.cpp RPC server of this build, or not one you can trust. (llama.cpp: %s)\n",
                list.c_str(), RPC_LOST_EXIT_CODE, message);
        fflush(stderr);
        _Exit(RPC_LOST_EXIT_CODE);
    }
    fprintf(stderr,
            "error: [rpc:lost] lost the connection to an RPC server (%s) in the middle of an answer: the server stopped or the "
            "network failed; the answer stops and this engine process exits (code %d), the next question reconnects. "
            "Start the server again with `reposnap rpc-server`. (llama.cpp: %s)\n",
            list.c_str(), RPC_LOST_EXIT_CODE, message);
    fflush(stderr);
    _Exit(RPC_LOST_EXIT_CODE);
}

} // namespace

bool split_endpoint(const std::string & endpoint, std::string & host, std::string & port) {
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 >= endpoint.size() || endpoint.size() - colon - 1 > 5) {
        return false;
    }
    host = endpoint.substr(0, colon);
    port = endpoint.substr(colon + 1);
    for (char c : port) {
        if (c < '0' || c > '9') {
            return false;
        }
    }
    const long p = strtol(port.c_str(), nullptr, 10);
    return p >= 1 && p <= 65535 && host.find(':') == std::string::npos;
}

std::vector<ggml_backend_dev_t> rpc_devices(const std::vector<std::string> & endpoints) {
    std::vector<ggml_backend_dev_t> devs;
    for (const auto & e : endpoints) {
        std::string host, port;
        if (!split_endpoint(e, host, port)) {
            fail("endpoint", "'" + e + "' is not an RPC server endpoint: write host:port, e.g. 127.0.0.1:50052");
        }
        probe(e, host, port);
    }
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        for (const auto & e : endpoints) {
            bool known = false;
            for (const auto & k : g_endpoints) {
                known = known || k == e;
            }
            if (!known) {
                g_endpoints.push_back(e);
            }
        }
    }
    ggml_set_abort_callback(on_abort);
    for (const auto & e : endpoints) {
        // connects (ggml-rpc keeps one connection per endpoint while a buffer or backend uses it)
        ggml_backend_reg_t reg = rpc_fn<decltype(&ggml_backend_rpc_add_server)>("ggml_backend_rpc_add_server")(e.c_str());
        if (!reg) {
            fail("unreachable", "RPC server " + e + " has no devices");
        }
        // not ggml_backend_register: a registered server would be one of the devices that every later
        // model of this process (one loaded without rpcServers) spreads its layers over
        for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
            devs.push_back(ggml_backend_reg_dev_get(reg, i));
        }
    }
    return devs;
}

Napi::Value StartRpcServer(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    backend_init();
    Napi::Object o = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
    const std::string host = opt<std::string>(o, "host", "127.0.0.1");
    const int32_t port = opt<int32_t>(o, "port", 50052);
    const int32_t threads = opt<int32_t>(o, "threads", 0);
    const std::string cache_dir = opt<std::string>(o, "cacheDir", "");
    std::string h, p;
    const std::string endpoint = host + ":" + std::to_string(port);
    if (!split_endpoint(endpoint, h, p)) {
        throw Napi::TypeError::New(env, "startRpcServer: host must be a host name or IPv4 address and port 1-65535 (got '" + endpoint + "')");
    }
    // gpu: every GPU device of this build (a CUDA/Vulkan/Metal engine), else the CPU
    const bool gpu = opt<bool>(o, "gpu", false);
    std::vector<ggml_backend_dev_t> devs;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        const auto t = ggml_backend_dev_type(d);
        if (gpu ? (t == GGML_BACKEND_DEVICE_TYPE_GPU || t == GGML_BACKEND_DEVICE_TYPE_IGPU) : t == GGML_BACKEND_DEVICE_TYPE_CPU) {
            devs.push_back(d);
            if (!gpu) {
                break;
            }
        }
    }
    if (devs.empty()) {
        throw Napi::Error::New(env, gpu ? "this engine has no GPU device: build a GPU backend with REPOSNAP_GPU=cuda|vulkan|metal npm run build:native (its module goes to native/build/gpu/; REPOSNAP_BACKEND selects it)"
                                        : "startRpcServer: this engine has no CPU device");
    }
    // returns only when it could not start (it serves clients, one at a time, until the process ends)
    decltype(&ggml_backend_rpc_start_server) start_server = nullptr;
    try {
        start_server = rpc_fn<decltype(&ggml_backend_rpc_start_server)>("ggml_backend_rpc_start_server");
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
    start_server(endpoint.c_str(), cache_dir.empty() ? nullptr : cache_dir.c_str(),
                                  (size_t) (threads > 0 ? threads : 1), devs.size(), devs.data());
    throw Napi::Error::New(env, "the RPC server could not listen on " + endpoint + " (the port is in use, or the address is not one of this machine's)");
}

} // namespace reposnap_addon
