// hitlbot web chat. Plain JavaScript, no build step, no external resources.
// The protocol is documented in channels/web/doc.go.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

  function randomId() {
    const b = new Uint8Array(9);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  // The token comes as ?token= once; it is kept for this tab only and
  // removed from the address bar so it is not bookmarked or shared.
  const params = new URLSearchParams(location.search);
  let token = sessionStorage.getItem('hitlbot.token') || '';
  if (params.has('token')) {
    token = params.get('token') || '';
    sessionStorage.setItem('hitlbot.token', token);
    params.delete('token');
    const q = params.toString();
    history.replaceState(null, '', location.pathname + (q ? '?' + q : '') + location.hash);
  }
  let sessionId = params.get('session') || localStorage.getItem('hitlbot.session') || '';
  if (!ID_RE.test(sessionId)) sessionId = 's_' + randomId();
  localStorage.setItem('hitlbot.session', sessionId);
  $('session').textContent = '会话 ' + sessionId;

  const pending = new Map(); // step_id -> agent.user_confirm frame
  let current = null; // step_id in the dialog
  let ws = null;
  let open = false;
  let everOpened = false;
  let backoff = 500;
  let retry = null;

  // --- connection -------------------------------------------------------
  function wsURL() {
    const u = new URL('ws', location.href);
    u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    u.search = '';
    if (token) u.searchParams.set('token', token);
    return u.toString();
  }

  function connect() {
    clearTimeout(retry);
    setStatus('连接中…', 'connecting');
    const sock = new WebSocket(wsURL());
    ws = sock;
    sock.onopen = () => {
      open = true;
      everOpened = true;
      backoff = 500;
      $('hint').hidden = true;
      setStatus('已连接', 'online');
      send({ type: 'hello', session_id: sessionId });
      updateInput();
    };
    sock.onmessage = (ev) => {
      let f;
      try { f = JSON.parse(ev.data); } catch (e) { return; }
      handle(f);
    };
    sock.onclose = () => {
      if (ws !== sock) return;
      open = false;
      ws = null;
      setStatus('已断开，' + Math.round(backoff / 100) / 10 + ' 秒后重连…', 'offline');
      if (!everOpened) {
        const h = $('hint');
        h.textContent = '无法连接。如果服务器要求令牌，请用 /?token=<你的令牌> 打开本页。';
        h.hidden = false;
      }
      updateInput();
      retry = setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    };
  }

  function send(frame) {
    if (!ws || !open) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  function setStatus(text, cls) {
    const s = $('status');
    s.textContent = text;
    s.className = 'status ' + cls;
  }

  // --- frames -----------------------------------------------------------
  function handle(f) {
    switch (f.type) {
      case 'hello':
        $('who').textContent = '用户 ' + f.user;
        // The server re-sends what is still pending right after this.
        pending.clear();
        closeDialog();
        renderPending();
        break;
      case 'agent.delta':
        onDelta(f);
        break;
      case 'agent.message':
        if (f.stream_id && endStream(f)) break;
        addLine(f.kind === 'answer' ? 'bot' : 'notice', f.content, f.is_error);
        break;
      case 'agent.tool_result':
        addLine('tool', '🔧 ' + f.tool_name + '：' + f.content, f.is_error);
        break;
      case 'agent.user_confirm':
        if (!pending.has(f.step_id)) {
          pending.set(f.step_id, f);
          addLine('notice', '需要确认：' + (f.metadata.summary || f.metadata.tool_name));
        }
        renderPending();
        if (!current) openDialog(f.step_id);
        break;
      case 'agent.confirm_resolved':
        if (pending.has(f.step_id)) {
          let line = '审批结果：' + (f.status_text || f.status);
          if (f.decided_by) line += '（' + f.decided_by + '）';
          addLine(f.status === 'executed' || f.status === 'replayed' ? 'ok' : 'notice', line);
        }
        settle(f.step_id);
        break;
      case 'error':
        onError(f);
        break;
    }
  }

  function onError(f) {
    const msg = f.message + ' [' + f.code + ']';
    if (f.step_id && (f.code === 'UNAUTHORIZED' || f.code === 'UNAVAILABLE')) {
      // The step can still be answered (by someone else, or later).
      if (current === f.step_id) {
        $('dlg-error').textContent = msg;
        $('dlg-error').hidden = false;
        setButtons(true);
      }
      addLine('error', msg, true);
      return;
    }
    addLine('error', msg, true);
    if (f.step_id && pending.has(f.step_id) &&
        (f.code === 'ALREADY_DECIDED' || f.code === 'EXPIRED' || f.code === 'INVALID_STEP_ID')) {
      settle(f.step_id);
    }
  }

  function settle(stepId) {
    pending.delete(stepId);
    renderPending();
    if (current === stepId) {
      closeDialog();
      const next = pending.keys().next();
      if (!next.done) openDialog(next.value);
    }
  }

  // --- streamed answers ---------------------------------------------------
  // agent.delta frames grow one line per stream_id; the agent.message with
  // the same stream_id puts the final text in it.
  const streams = new Map();

  function onDelta(f) {
    let li = streams.get(f.stream_id);
    if (!li) {
      addLine('bot streaming', '');
      li = $('log').lastElementChild;
      li.setAttribute('aria-busy', 'true');
      streams.set(f.stream_id, li);
    }
    li.textContent += f.content;
    li.scrollIntoView({ block: 'end' });
  }

  // endStream ends the stream's line; false when no delta of it came here
  // (the message is then added as any other).
  function endStream(f) {
    const li = streams.get(f.stream_id);
    if (!li) return false;
    streams.delete(f.stream_id);
    li.textContent = f.content;
    li.className = 'line ' + (f.kind === 'answer' ? 'bot' : 'notice') + (f.is_error ? ' is-error' : '');
    li.removeAttribute('aria-busy');
    return true;
  }

  // --- chat -------------------------------------------------------------
  function addLine(kind, text, isError) {
    const li = document.createElement('li');
    li.className = 'line ' + kind + (isError ? ' is-error' : '');
    li.textContent = text;
    $('log').appendChild(li);
    li.scrollIntoView({ block: 'end' });
  }

  function updateInput() {
    const blocked = !open || pending.size > 0;
    $('input').disabled = blocked;
    $('send').disabled = blocked;
    $('input').placeholder = pending.size > 0 ? '请先处理待确认的操作' : '输入消息，例如 /sql DELETE FROM orders WHERE status = \'cancelled\'';
    if (!blocked && !current) $('input').focus();
  }

  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('input').value.trim();
    if (!text || pending.size > 0) return;
    if (send({ type: 'user.message', session_id: sessionId, content: text, message_id: 'm_' + randomId() })) {
      addLine('user', text);
      $('input').value = '';
    }
  });

  // --- pending list -----------------------------------------------------
  function remaining(f) {
    const ms = Date.parse(f.metadata.expires_at) - Date.now();
    if (!(ms > 0)) return '已过期';
    const s = Math.floor(ms / 1000);
    return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  }

  function renderPending() {
    const ul = $('pending');
    ul.textContent = '';
    for (const [stepId, f] of pending) {
      const li = document.createElement('li');
      li.className = 'pending-item';
      li.dataset.step = stepId;
      const risk = document.createElement('span');
      risk.className = 'risk risk-' + f.metadata.risk;
      risk.textContent = f.metadata.risk;
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = f.metadata.tool_name;
      const left = document.createElement('span');
      left.className = 'left';
      left.textContent = remaining(f);
      li.append(risk, name, left);
      li.addEventListener('click', () => openDialog(stepId));
      ul.appendChild(li);
    }
    $('none').hidden = pending.size > 0;
    updateInput();
  }

  // --- dialog -----------------------------------------------------------
  function openDialog(stepId) {
    const f = pending.get(stepId);
    if (!f) return;
    current = stepId;
    const m = f.metadata;
    $('dlg-tool').textContent = m.tool_name;
    $('dlg-desc').textContent = m.tool_description || m.summary || '';
    const risk = $('dlg-risk');
    risk.textContent = m.risk;
    risk.className = 'risk risk-' + m.risk;
    $('dlg-approvers').textContent = m.approvers || '';
    let args;
    try { args = JSON.stringify(m.tool_args, null, 2); } catch (e) { args = String(m.tool_args); }
    $('dlg-args').textContent = args;
    $('dlg-preview').textContent = m.preview || '';
    $('dlg-preview-box').hidden = !m.preview;
    $('dlg-comment').value = '';
    $('dlg-error').hidden = true;
    $('dlg-countdown').textContent = remaining(f);
    setButtons(true);
    $('overlay').hidden = false;
    // A HIGH-risk call is never approved by reflex: the focus starts on
    // 取消, and Enter does not approve it (see the keydown handler).
    (isHigh(f) ? $('dlg-reject') : $('dlg-approve')).focus();
  }

  function isHigh(f) {
    return !!f && String(f.metadata.risk).toUpperCase() === 'HIGH';
  }

  function closeDialog() {
    current = null;
    $('overlay').hidden = true;
    updateInput();
  }

  function setButtons(enabled) {
    $('dlg-approve').disabled = !enabled;
    $('dlg-reject').disabled = !enabled;
  }

  function answer(confirmed) {
    if (!current || $('dlg-approve').disabled) return;
    const ok = send({
      type: 'user.response', session_id: sessionId, step_id: current,
      content: { confirmed: confirmed, message: $('dlg-comment').value.trim() },
    });
    if (!ok) {
      $('dlg-error').textContent = '未连接，稍后重试。';
      $('dlg-error').hidden = false;
      return;
    }
    setButtons(false);
    $('dlg-error').textContent = confirmed ? '正在执行…' : '正在取消…';
    $('dlg-error').hidden = false;
  }

  $('dlg-approve').addEventListener('click', () => answer(true));
  $('dlg-reject').addEventListener('click', () => answer(false));
  document.addEventListener('keydown', (ev) => {
    if ($('overlay').hidden) return;
    if (ev.key === 'Escape') {
      ev.preventDefault();
      answer(false);
    } else if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      // HIGH: Enter acts only as the focused control does (on 取消, it
      // declines); approving takes a click on 确认执行.
      if (isHigh(pending.get(current))) return;
      ev.preventDefault();
      answer(true);
    }
  });

  setInterval(() => {
    for (const li of $('pending').children) {
      const f = pending.get(li.dataset.step);
      if (f) li.querySelector('.left').textContent = remaining(f);
    }
    if (current && pending.has(current)) $('dlg-countdown').textContent = remaining(pending.get(current));
  }, 1000);

  connect();
})();
