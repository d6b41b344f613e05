// Preloaded with `node --require` by mcpx's tests: a server that calls
// listen(port) without a host (server-everything's streamableHttp mode)
// binds 127.0.0.1 instead of every interface.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    if (args.length === 1 || typeof args[1] === "function") {
      args.splice(1, 0, "127.0.0.1");
    }
  } else if (args[0] && typeof args[0] === "object" && args[0].port !== undefined && !args[0].host) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
