// optixasync viewer page: frames from the WebSocket onto a canvas, input and settings back to the server.
// Protocol: binary frame = uint32 LE header length, JSON header, image bytes; the page answers {type: "ack", seq}
// once the frame is drawn. Input messages are JSON objects (see optixasync/viewer/_messages.py).
"use strict";

(() => {
  const KEYS = new Set(["w", "a", "s", "d", "q", "e", "arrowleft", "arrowright", "arrowup", "arrowdown", "+", "-", "r"]);
  const canvas = document.getElementById("view");
  const context = canvas.getContext("2d", { alpha: false });
  const overlay = document.getElementById("overlay");
  const status = document.getElementById("status");
  const controls = {
    denoise: document.getElementById("denoise"),
    spp: document.getElementById("spp"),
    resolution: document.getElementById("resolution"),
    maxDepth: document.getElementById("maxDepth"),
  };
  const decoder = new TextDecoder();

  // Everything a test or a curious user may want to read: window.viewerStats.
  const stats = {
    connected: false, connections: 0, frames: 0, drawn: 0, decodeErrors: 0, lastSeq: 0, frameId: 0, cameraId: 0,
    cameraIds: [], samples: 0, denoise: false, width: 0, height: 0, deliveredFps: 0, messagesSent: 0, header: null, settings: null,
  };
  window.viewerStats = stats;

  let ws = null;
  let drawnSeq = 0;
  let fpsWindow = [];
  let lastOverlay = 0;

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify(message));
      stats.messagesSent += 1;
    }
  }

  function setStatus(text, ok) {
    status.textContent = text;
    status.classList.toggle("ok", ok);
  }

  // -- frames ------------------------------------------------------------------------------------------

  function syncControls(settings) {
    if (!settings) return;
    stats.settings = settings;
    const active = document.activeElement;
    if (active !== controls.denoise) controls.denoise.checked = !!settings.denoise;
    if (active !== controls.spp) controls.spp.value = settings.spp;
    if (active !== controls.maxDepth) controls.maxDepth.value = settings.max_depth;
    if (active !== controls.resolution) {
      const value = `${settings.width}x${settings.height}`;
      if (![...controls.resolution.options].some((o) => o.value === value)) {
        const option = document.createElement("option");
        option.value = option.textContent = value;
        controls.resolution.prepend(option);
      }
      controls.resolution.value = value;
    }
  }

  function fmt(value, digits, suffix = "") {
    return value === null || value === undefined ? "-" : `${Number(value).toFixed(digits)}${suffix}`;
  }

  function drawOverlay(now) {
    if (now - lastOverlay < 200 || !stats.header) return;
    lastOverlay = now;
    const h = stats.header, s = h.stats || {}, v = h.viewer || {};
    overlay.textContent = [
      `source fps      ${fmt(s.fps, 1)}`,
      `delivered fps   ${fmt(stats.deliveredFps, 1)}`,
      `frames in flight ${s.frames_in_flight ?? "-"}`,
      `GPU busy        ${s.gpu_busy === null || s.gpu_busy === undefined ? "-" : fmt(100 * s.gpu_busy, 1, " %")}`,
      `host submit     ${fmt(s.submit_ms, 3, " ms")}`,
      `samples         ${h.samples}`,
      `denoise         ${s.denoise ? "on" : "off"}`,
      `image           ${h.width}x${h.height}  frame ${h.frame}  camera ${h.camera}`,
      `encode          ${fmt(v.encode_ms, 1, " ms")} (${v.encoder || "-"})  dropped ${v.dropped ?? "-"}  tabs ${v.clients ?? "-"}`,
    ].join("\n");
  }

  // Pacing: a decoded frame waits in `newest` for the next display refresh. It is acknowledged at once when the
  // slot was empty (the server may start the next frame while this one waits), else the ack waits for the refresh
  // that draws it: the server sends about one frame per refresh, plus at most max_unacked in flight.
  let newest = null;
  let ackUpTo = 0;
  let drawScheduled = false;

  function draw(now) {
    drawScheduled = false;
    if (newest) {
      const { bitmap, header } = newest;
      newest = null;
      if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
        canvas.width = bitmap.width;
        canvas.height = bitmap.height;
      }
      context.drawImage(bitmap, 0, 0);
      bitmap.close();
      fpsWindow.push(now);
      while (fpsWindow.length && fpsWindow[0] < now - 1000) fpsWindow.shift();
      stats.deliveredFps = fpsWindow.length > 1 ? (1000 * (fpsWindow.length - 1)) / (now - fpsWindow[0]) : 0;
      stats.drawn += 1;
      stats.lastSeq = header.seq;
      stats.frameId = header.frame;
      if (header.camera !== stats.cameraId) {
        stats.cameraIds.push(header.camera);
        if (stats.cameraIds.length > 200) stats.cameraIds.shift();
      }
      stats.cameraId = header.camera;
      stats.samples = header.samples;
      stats.width = header.width;
      stats.height = header.height;
      stats.denoise = !!(header.stats && header.stats.denoise);
      stats.header = header;
      syncControls(header.settings);
      drawOverlay(now);
    }
    if (ackUpTo) {
      send({ type: "ack", seq: ackUpTo });
      ackUpTo = 0;
    }
  }

  function scheduleDraw() {
    if (!drawScheduled) {
      drawScheduled = true;
      requestAnimationFrame(draw);
    }
  }

  function onFrame(buffer) {
    const view = new DataView(buffer);
    const length = view.getUint32(0, true);
    const header = JSON.parse(decoder.decode(new Uint8Array(buffer, 4, length)));
    const blob = new Blob([new Uint8Array(buffer, 4 + length)], { type: header.mime || "image/jpeg" });
    const connection = ws;
    stats.frames += 1;
    let waited = true;
    createImageBitmap(blob).then((bitmap) => {
      if (connection !== ws || header.seq <= drawnSeq) {
        bitmap.close(); // a frame of an old connection, or one overtaken by a newer frame
        return;
      }
      drawnSeq = header.seq;
      waited = newest !== null;
      if (newest) newest.bitmap.close();
      newest = { bitmap, header };
    }).catch(() => {
      stats.decodeErrors += 1;
    }).finally(() => {
      if (connection !== ws) return;
      if (waited) ackUpTo = Math.max(ackUpTo, header.seq);
      else send({ type: "ack", seq: header.seq });
      scheduleDraw();
    });
  }

  // -- connection --------------------------------------------------------------------------------------

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const token = new URLSearchParams(location.search).get("token");  // a viewer served beyond loopback needs it
    const query = token ? `?token=${encodeURIComponent(token)}` : "";
    ws = new WebSocket(`${scheme}://${location.host}/ws${query}`);
    ws.binaryType = "arraybuffer";
    drawnSeq = 0;
    ackUpTo = 0;
    if (newest) newest.bitmap.close();
    newest = null;
    ws.onopen = () => {
      stats.connected = true;
      stats.connections += 1;
      setStatus("connected", true);
    };
    ws.onmessage = (event) => {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.type === "hello") syncControls(message.settings);
        return;
      }
      onFrame(event.data);
    };
    ws.onclose = () => {
      stats.connected = false;
      setStatus("disconnected: reconnecting...", false);
      setTimeout(connect, 1000);
    };
  }

  // -- input -------------------------------------------------------------------------------------------

  const pending = { orbit: [0, 0], pan: [0, 0], zoom: 0 };
  let flushScheduled = false;

  function flush() {
    flushScheduled = false;
    if (pending.orbit[0] || pending.orbit[1]) send({ type: "orbit", dx: pending.orbit[0], dy: pending.orbit[1] });
    if (pending.pan[0] || pending.pan[1]) send({ type: "pan", dx: pending.pan[0], dy: pending.pan[1] });
    if (pending.zoom) send({ type: "zoom", steps: pending.zoom });
    pending.orbit = [0, 0];
    pending.pan = [0, 0];
    pending.zoom = 0;
  }

  function schedule() {
    if (!flushScheduled) {
      flushScheduled = true;
      setTimeout(flush, 16); // at most one message of each kind per display frame
    }
  }

  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    canvas.focus();
    canvas.setPointerCapture(event.pointerId);
    const pan = event.button === 1 || event.button === 2 || event.shiftKey;
    drag = { x: event.clientX, y: event.clientY, mode: pan ? "pan" : "orbit" };
    canvas.classList.add("dragging");
    event.preventDefault();
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    // the image is letterboxed in the element (object-fit: contain): normalise by its displayed height
    const shown = Math.min(canvas.clientHeight, (canvas.clientWidth * canvas.height) / Math.max(canvas.width, 1));
    const scale = 1 / Math.max(shown, 1);
    pending[drag.mode][0] += (event.clientX - drag.x) * scale;
    pending[drag.mode][1] += (event.clientY - drag.y) * scale;
    drag.x = event.clientX;
    drag.y = event.clientY;
    schedule();
  });
  const endDrag = () => {
    drag = null;
    canvas.classList.remove("dragging");
  };
  canvas.addEventListener("pointerup", endDrag);
  canvas.addEventListener("pointercancel", endDrag);
  canvas.addEventListener("contextmenu", (event) => event.preventDefault());
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    const pixels = event.deltaMode === 1 ? event.deltaY * 33 : event.deltaMode === 2 ? event.deltaY * 400 : event.deltaY;
    pending.zoom += pixels / 100;
    schedule();
  }, { passive: false });
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement) return;
    const key = event.key.toLowerCase();
    if (!KEYS.has(key) || event.ctrlKey || event.metaKey || event.altKey) return;
    event.preventDefault();
    send({ type: "key", key });
  });

  // -- settings ----------------------------------------------------------------------------------------

  controls.denoise.addEventListener("change", () => send({ type: "settings", denoise: controls.denoise.checked }));
  controls.spp.addEventListener("change", () => {
    const spp = Number.parseInt(controls.spp.value, 10);
    if (Number.isFinite(spp)) send({ type: "settings", spp });
  });
  controls.maxDepth.addEventListener("change", () => {
    const depth = Number.parseInt(controls.maxDepth.value, 10);
    if (Number.isFinite(depth)) send({ type: "settings", max_depth: depth });
  });
  controls.resolution.addEventListener("change", () => {
    const [width, height] = controls.resolution.value.split("x").map((v) => Number.parseInt(v, 10));
    if (Number.isFinite(width) && Number.isFinite(height)) send({ type: "settings", width, height });
  });
  document.getElementById("reset").addEventListener("click", () => send({ type: "reset" }));
  document.getElementById("controls").addEventListener("submit", (event) => event.preventDefault());

  connect();
})();
