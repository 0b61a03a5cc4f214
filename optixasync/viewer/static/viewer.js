// optixasync viewer page: the shared user interface (viewer_ui.js) over a WebSocket to the viewer's server, which
// reconnects a second after the connection drops.
"use strict";

(() => {
  let ws = null;
  let stopped = false;
  const transport = {
    send(message) {
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
    },
    start(handlers) {
      const connect = () => {
        const scheme = location.protocol === "https:" ? "wss" : "ws";
        const token = new URLSearchParams(location.search).get("token");  // a viewer beyond loopback needs it
        const query = token ? `?token=${encodeURIComponent(token)}` : "";
        const socket = new WebSocket(`${scheme}://${location.host}/ws${query}`);
        ws = socket;
        socket.binaryType = "arraybuffer";
        socket.onopen = () => handlers.open();
        socket.onmessage = (event) => {
          if (typeof event.data === "string") handlers.text(JSON.parse(event.data));
          else handlers.frame(new Uint8Array(event.data));
        };
        socket.onclose = () => {
          if (ws !== socket) return;
          handlers.close("disconnected: reconnecting...");
          if (!stopped) setTimeout(connect, 1000);
        };
      };
      connect();
    },
    stop() {
      stopped = true;
      if (ws) ws.close();
    },
  };
  const viewer = mountViewer(document.getElementById("app"), transport);
  window.viewerStats = viewer.stats;
})();
