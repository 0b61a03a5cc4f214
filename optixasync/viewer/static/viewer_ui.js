// optixasync viewer user interface, shared by the web page (viewer.js: a WebSocket) and the notebook widget (the
// kernel's comm channel): frames onto a canvas, input, settings and capture commands back to the renderer.
// Protocol (optixasync/viewer/_wire.py, _messages.py): a frame is uint32 LE header length, JSON header, image bytes;
// the UI answers {type: "ack", seq} once the frame is drawn. Input messages are JSON objects.
// mountViewer(root, transport, options) builds the UI inside `root`; transport.start(handlers) delivers
// handlers.open(), handlers.text(object), handlers.frame(Uint8Array), handlers.close(); transport.send(object).
"use strict";

function mountViewer(root, transport, options = {}) {
  const KEYS = new Set(["w", "a", "s", "d", "q", "e", "arrowleft", "arrowright", "arrowup", "arrowdown", "+", "-", "r"]);
  const RESOLUTIONS = ["320x180", "480x270", "512x512", "640x360", "960x540", "1024x1024", "1280x720", "1920x1080",
    "3840x2160"];
  const help = "drag: orbit \u00b7 right/shift-drag: pan \u00b7 wheel: zoom \u00b7 WASD QE: move \u00b7 arrows: orbit \u00b7 R: reset";
  root.classList.add("oxa-root");
  root.innerHTML = `
<div class="oxa-stage">
  <canvas class="oxa-view" width="16" height="16" tabindex="0" aria-label="rendered image: ${help}"></canvas>
  <pre class="oxa-overlay" aria-live="off">connecting...</pre>
  <div class="oxa-status">connecting...</div>
</div>
<form class="oxa-controls" autocomplete="off">
  <label><input type="checkbox" class="oxa-denoise"> denoise</label>
  <label>spp/frame <input type="number" class="oxa-spp" min="1" max="256" step="1" value="1"></label>
  <label>resolution <select class="oxa-resolution">${RESOLUTIONS.map((r) => `<option value="${r}">${r}</option>`).join("")}</select></label>
  <label>max depth <input type="number" class="oxa-max-depth" min="1" max="64" step="1" value="8"></label>
  <button type="button" class="oxa-reset">reset camera</button>
  <span class="oxa-capture">
    <button type="button" class="oxa-save-png" title="save the current image as PNG">save PNG</button>
    <button type="button" class="oxa-save-exr" title="save the current image as linear EXR">save EXR</button>
    <button type="button" class="oxa-record-clip" title="record an MP4 clip">record clip</button>
    <button type="button" class="oxa-record-path" title="record the camera path">record path</button>
    <button type="button" class="oxa-play-path" title="play the recorded camera path">play path</button>
  </span>
  <span class="oxa-message" aria-live="polite"></span>
  <span class="oxa-help">${help}</span>
</form>`;
  const find = (name) => root.querySelector(`.oxa-${name}`);
  const canvas = find("view");
  const context = canvas.getContext("2d", { alpha: false });
  const overlay = find("overlay");
  const status = find("status");
  const note = find("message");
  const controls = { denoise: find("denoise"), spp: find("spp"), resolution: find("resolution"), maxDepth: find("max-depth") };
  const decoder = new TextDecoder();

  // Everything a test or a curious user may want to read: root.viewerStats (and window.viewerStats on the page).
  const stats = {
    connected: false, connections: 0, frames: 0, drawn: 0, decodeErrors: 0, lastSeq: 0, frameId: 0, cameraId: 0,
    cameraIds: [], samples: 0, denoise: false, width: 0, height: 0, deliveredFps: 0, messagesSent: 0, header: null,
    settings: null, replies: [],
  };
  root.viewerStats = stats;

  let open = false;
  let generation = 0;
  let drawnSeq = 0;
  let fpsWindow = [];
  let lastOverlay = 0;
  let nextId = 1;
  let closed = false;

  function send(message) {
    if (open) {
      transport.send(message);
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
      `encode          ${fmt(v.encode_ms, 1, " ms")} (${v.encoder || "-"})  dropped ${v.dropped ?? "-"}  views ${v.clients ?? "-"}`,
    ].join("\n");
  }

  // Pacing: a decoded frame waits in `newest` for the next display refresh. It is acknowledged at once when the
  // slot was empty (the renderer may start the next frame while this one waits), else the ack waits for the refresh
  // that draws it: about one frame per refresh arrives, plus at most max_unacked in flight.
  let newest = null;
  let ackUpTo = 0;
  let drawScheduled = false;

  function show(bitmap, header, now) {
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
    if (header.play) { // a path that ended: the button goes back to "play path"
      lastPlayId = header.play.id;
      if (capture.play && header.play.id > playAwait && !header.play.playing) setToggle("play", false);
    }
    drawOverlay(now);
  }

  function draw(now) {
    drawScheduled = false;
    if (newest) {
      const { bitmap, header } = newest;
      newest = null;
      show(bitmap, header, now);
    }
    if (ackUpTo) {
      send({ type: "ack", seq: ackUpTo });
      ackUpTo = 0;
    }
  }

  function scheduleDraw() {
    if (!drawScheduled && !closed) {
      drawScheduled = true;
      requestAnimationFrame(draw);
    }
  }

  function onFrame(bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const length = view.getUint32(0, true);
    const header = JSON.parse(decoder.decode(bytes.subarray(4, 4 + length)));
    const blob = new Blob([bytes.subarray(4 + length)], { type: header.mime || "image/jpeg" });
    const connection = generation;
    stats.frames += 1;
    let waited = true;
    createImageBitmap(blob).then((bitmap) => {
      if (connection !== generation || header.seq <= drawnSeq || closed) {
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
      if (connection !== generation) return;
      if (waited) ackUpTo = Math.max(ackUpTo, header.seq);
      else send({ type: "ack", seq: header.seq });
      scheduleDraw();
    });
  }

  // -- replies to capture commands ---------------------------------------------------------------------

  const capture = { clip: false, path: false, play: false };
  let lastPlayId = 0; // the paths started, as the newest frame says
  let playAwait = 0; // the paths started before the last click on "play path"
  const labels = { clip: ["record clip", "stop clip"], path: ["record path", "stop path"], play: ["play path", "stop playing"] };
  const buttons = { clip: find("record-clip"), path: find("record-path"), play: find("play-path") };

  function setToggle(what, on) {
    capture[what] = on;
    buttons[what].textContent = labels[what][on ? 1 : 0];
    buttons[what].classList.toggle("on", on);
  }

  function onText(message) {
    if (message.type === "hello") {
      syncControls(message.settings);
      if (message.settings && stats.drawn === 0) { // the image's shape before its first frame
        canvas.width = message.settings.width;
        canvas.height = message.settings.height;
      }
    } else if (message.type === "done" || message.type === "ignored") {
      stats.replies.push(message);
      if (stats.replies.length > 50) stats.replies.shift();
      if (message.type === "done") {
        note.textContent = message.file ? `saved ${message.file}${message.note ? ` (${message.note})` : ""}` : "";
      } else {
        note.textContent = message.reason;
        for (const what of Object.keys(pendingToggles)) {
          if (pendingToggles[what] === message.id) setToggle(what, !capture[what]); // it did not happen
        }
      }
    }
  }

  const pendingToggles = {};

  function command(message, toggle) {
    const id = nextId++;
    if (toggle) pendingToggles[toggle] = id;
    send({ ...message, id });
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
  // The page takes keys anywhere; the widget only while its image has the focus (a notebook needs its keys).
  const keyTarget = options.keysOnImage ? canvas : document;
  const onKey = (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement) return;
    const key = event.key.toLowerCase();
    if (!KEYS.has(key) || event.ctrlKey || event.metaKey || event.altKey) return;
    event.preventDefault();
    event.stopPropagation();
    send({ type: "key", key });
  };
  keyTarget.addEventListener("keydown", onKey);

  // -- settings and capture ----------------------------------------------------------------------------

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
  find("reset").addEventListener("click", () => send({ type: "reset" }));
  find("save-png").addEventListener("click", () => command({ type: "save", format: "png" }));
  find("save-exr").addEventListener("click", () => command({ type: "save", format: "exr" }));
  for (const what of ["clip", "path"]) {
    buttons[what].addEventListener("click", () => {
      setToggle(what, !capture[what]);
      command({ type: "record", what, on: capture[what] }, what);
    });
  }
  buttons.play.addEventListener("click", () => {
    if (!capture.play) playAwait = lastPlayId;
    setToggle("play", !capture.play);
    command({ type: "play", on: capture.play }, "play");
  });
  find("controls").addEventListener("submit", (event) => event.preventDefault());

  // -- the connection ----------------------------------------------------------------------------------

  transport.start({
    open() {
      open = true;
      generation += 1;
      drawnSeq = 0;
      ackUpTo = 0;
      if (newest) newest.bitmap.close();
      newest = null;
      stats.connected = true;
      stats.connections += 1;
      setStatus("connected", true);
    },
    text: onText,
    frame: onFrame,
    close(text) {
      open = false;
      generation += 1;
      stats.connected = false;
      setStatus(text || "disconnected", false);
    },
  });

  return {
    stats,
    destroy() {
      closed = true;
      open = false;
      keyTarget.removeEventListener("keydown", onKey);
      transport.stop();
      if (newest) newest.bitmap.close();
      newest = null;
    },
  };
}
