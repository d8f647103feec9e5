#include "viz/server.h"

#include <sys/socket.h>

#include <charconv>
#include <cstdio>
#include <httplib.h>

#include "kiln/error.h"
#include "support/env.h"
#include "viz/api.h"
#include "viz/web_assets.h"

namespace kiln::viz {
namespace {

constexpr const char* kHost = "127.0.0.1";
constexpr int kDefaultPort = 8000, kPortsTried = 100;

const char* mime_type(const std::string& path) {
  auto ends_with = [&](const char* ext) { return path.size() >= strlen(ext) && path.ends_with(ext); };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  if (ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

void routes(httplib::Server& svr) {
  for (const WebAsset& a : web_assets()) {
    std::string path = a.path;
    auto send = [a, path](const httplib::Request&, httplib::Response& res) {
      res.set_content(reinterpret_cast<const char*>(a.data), a.size, mime_type(path));
    };
    svr.Get(path, send);
    if (path == "/index.html") svr.Get("/", send);
  }
  auto json = [](httplib::Response& res, const std::string& body) { res.set_content(body, "application/json"); };
  svr.Get("/api/traces", [json](const httplib::Request&, httplib::Response& res) { json(res, traces_json()); });
  svr.Get("/api/kernels", [json](const httplib::Request&, httplib::Response& res) { json(res, kernels_json()); });
  svr.Get("/api/schedule", [json](const httplib::Request&, httplib::Response& res) { json(res, schedules_json()); });
  svr.Get(R"(/api/trace/(\d+))", [json](const httplib::Request& req, httplib::Response& res) {
    // an id too big for size_t names no trace either (stoull would throw: a 500)
    const std::string text = req.matches[1].str();
    size_t id = 0;
    const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (err == std::errc() && end == text.data() + text.size())
      if (auto body = trace_json(id)) return json(res, *body);
    res.status = 404;
    res.set_content("no trace " + req.matches[1].str(), "text/plain");
  });
}

// Binds the port; returns it. Only SO_REUSEADDR (httplib would add SO_REUSEPORT, which lets two
// servers share a port and hides that it is busy).
int bind_port(httplib::Server& svr) {
  svr.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  std::string requested = env::get_string("VIZ_PORT");
  if (!requested.empty()) {
    int port = parse_port(requested);
    if (!svr.bind_to_port(kHost, port))
      throw_error("VIZ: cannot listen on ", kHost, ":", port, " (VIZ_PORT): the port is in use; set VIZ_PORT to a free one");
    return port;
  }
  for (int port = kDefaultPort; port < kDefaultPort + kPortsTried; port++)
    if (svr.bind_to_port(kHost, port)) return port;
  throw_error("VIZ: ports ", kDefaultPort, "-", kDefaultPort + kPortsTried - 1, " on ", kHost,
              " are all in use; set VIZ_PORT to a free port");
}

}  // namespace

int parse_port(const std::string& text) {
  size_t used = 0;
  long port = -1;
  try {
    port = std::stol(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || port < 1 || port > 65535)
    throw_error("VIZ_PORT must be a port number from 1 to 65535, got '", text, "'");
  return static_cast<int>(port);
}

void serve() {
  httplib::Server svr;
  routes(svr);
  int port = bind_port(svr);
  fprintf(stderr, "VIZ: serving http://%s:%d (Ctrl-C to stop)\n", kHost, port);
  fflush(stderr);
  if (!svr.listen_after_bind()) throw_error("VIZ: the server on ", kHost, ":", port, " stopped with an error");
}

}  // namespace kiln::viz
