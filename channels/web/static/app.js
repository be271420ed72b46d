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
      case 'agent.message':
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
        if (pending.has(f.step_id) || f.resolution) {
          let line = '审批结果：' + (f.status_text || f.status);
          if (f.decided_by) line += '（' + f.decided_by + '）';
          addLine(f.status === 'executed' || f.status === 'replayed' ? 'ok' : 'notice', line);
        }
        settle(f.step_id);
        resolveChoices(f);
        break;
      case 'error':
        onError(f);
        break;
    }
  }

  function onError(f) {
    const msg = f.message + ' [' + f.code + ']';
    if (f.step_id && (f.code === 'UNAUTHORIZED' || f.code === 'UNAVAILABLE')) {
      for (const b of document.querySelectorAll('li.resolve[data-step="' + CSS.escape(f.step_id) + '"] button')) b.disabled = false;
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

  // resolveChoices offers a frozen step's resolve choices (the server
  // sends them, in its language, with what they do) in the chat: a note
  // and one button per choice, answered with user.response {resolution,
  // message}. Any later state of the step takes the choices away.
  function resolveChoices(f) {
    for (const old of document.querySelectorAll('li.resolve[data-step="' + CSS.escape(f.step_id) + '"]')) old.remove();
    if (!f.resolve || !f.resolve.length) return;
    const li = document.createElement('li');
    li.className = 'line notice resolve';
    li.dataset.step = f.step_id;
    const how = document.createElement('p');
    how.textContent = f.resolve_how || '';
    const note = document.createElement('input');
    note.maxLength = 500;
    note.setAttribute('aria-label', f.resolve_how || 'note');
    li.append(how, note);
    for (const c of f.resolve) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = c.label;
      b.dataset.resolution = c.resolution;
      b.addEventListener('click', () => {
        for (const x of li.querySelectorAll('button')) x.disabled = true;
        send({
          type: 'user.response', session_id: sessionId, step_id: f.step_id,
          content: { resolution: c.resolution, message: note.value.trim() },
        });
      });
      li.append(b);
    }
    $('log').appendChild(li);
    li.scrollIntoView({ block: 'end' });
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
    renderCalls(f);
    fillEdit(f);
    $('dlg-error').hidden = true;
    $('dlg-countdown').textContent = remaining(f);
    // A MEDIUM call that may be allowed for the conversation: two approve
    // buttons, 仅本次 (grant once) and 本会话允许 (grant session).
    const grant = !!(f.card && f.card.approve_once);
    $('dlg-once').hidden = !grant;
    $('dlg-approve').textContent = grant ? '本会话允许（' + f.card.grant_window + '）' : '确认执行';
    setButtons(true);
    $('overlay').hidden = false;
    // A HIGH-risk call is never approved by reflex: the focus starts on
    // 取消, and Enter does not approve it (see the keydown handler).
    (isHigh(f) ? $('dlg-reject') : $('dlg-approve')).focus();
  }

  // A batch (its card lists several calls, each with a call_id): one
  // checkbox per call, all checked; 确认执行 sends calls {call_id:
  // approve|reject}, and only the checked calls run.
  function renderCalls(f) {
    const list = $('dlg-calls-list');
    list.textContent = '';
    const calls = (f.card && Array.isArray(f.card.calls)) ? f.card.calls : [];
    const batch = calls.length > 1 && calls.every((c) => c && c.call_id);
    $('dlg-calls').hidden = !batch;
    if (!batch) return;
    calls.forEach((c, i) => {
      const label = document.createElement('label');
      label.className = 'call-choice';
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.checked = true;
      box.dataset.callId = c.call_id;
      label.append(box, ' ' + (i + 1) + '. ' + c.tool + (c.summary ? ' — ' + c.summary.split('\n')[0] : ''));
      list.appendChild(label);
    });
  }

  // Edit before approve: the arguments, prefilled, in a text area; one
  // call's object as is, a batch's as {call_id: arguments}. Sent as
  // content.edits (one call: under "#1").
  function editCalls(f) {
    return (f && f.card && Array.isArray(f.card.calls)) ? f.card.calls : [];
  }

  function fillEdit(f) {
    const calls = editCalls(f);
    let doc = {};
    if (calls.length === 1) {
      doc = calls[0].args || {};
    } else {
      for (const c of calls) doc[c.call_id] = c.args || {};
    }
    $('dlg-edit').value = JSON.stringify(doc, null, 2);
    $('dlg-edit-box').open = false;
  }

  function answerEdit() {
    if (!current || $('dlg-approve').disabled) return;
    let parsed;
    try { parsed = JSON.parse($('dlg-edit').value); } catch (e) { parsed = null; }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      $('dlg-error').textContent = '参数必须是一个 JSON 对象。';
      $('dlg-error').hidden = false;
      return;
    }
    const edits = editCalls(pending.get(current)).length === 1 ? { '#1': parsed } : parsed;
    const ok = send({ type: 'user.response', session_id: sessionId, step_id: current,
      content: { confirmed: true, message: $('dlg-comment').value.trim(), edits: edits } });
    if (!ok) {
      $('dlg-error').textContent = '未连接，稍后重试。';
      $('dlg-error').hidden = false;
      return;
    }
    setButtons(false);
    $('dlg-error').textContent = '正在执行…';
    $('dlg-error').hidden = false;
  }

  function callChoices() {
    if ($('dlg-calls').hidden) return null;
    const out = {};
    for (const box of $('dlg-calls-list').querySelectorAll('input[type=checkbox]')) {
      out[box.dataset.callId] = box.checked ? 'approve' : 'reject';
    }
    return out;
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
    $('dlg-once').disabled = !enabled;
    $('dlg-reject').disabled = !enabled;
    $('dlg-edit-approve').disabled = !enabled;
  }

  function answer(confirmed, grant) {
    if (!current || $('dlg-approve').disabled) return;
    const content = { confirmed: confirmed, message: $('dlg-comment').value.trim() };
    if (grant) content.grant = grant;
    const calls = confirmed ? callChoices() : null;
    if (calls) content.calls = calls;
    const ok = send({ type: 'user.response', session_id: sessionId, step_id: current, content: content });
    if (!ok) {
      $('dlg-error').textContent = '未连接，稍后重试。';
      $('dlg-error').hidden = false;
      return;
    }
    setButtons(false);
    $('dlg-error').textContent = confirmed ? '正在执行…' : '正在取消…';
    $('dlg-error').hidden = false;
  }

  $('dlg-approve').addEventListener('click', () => answer(true, $('dlg-once').hidden ? '' : 'session'));
  $('dlg-once').addEventListener('click', () => answer(true, 'once'));
  $('dlg-edit-approve').addEventListener('click', () => answerEdit());
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
      // In the arguments being edited Enter is a new line, never an
      // approval of the arguments as proposed; the edit box's button
      // approves the edit.
      if (ev.target && (ev.target.id === 'dlg-edit' || ev.target.id === 'dlg-edit-approve')) return;
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
