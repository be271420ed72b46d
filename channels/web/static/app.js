// hitlbot web chat. Plain JavaScript, no build step, no external resources.
// The protocol is documented in channels/web/doc.go.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

  // --- words --------------------------------------------------------------
  // The server renders the page in its configured language and puts the
  // page's sentences (from the words catalogue) in data-words; {name}
  // placeholders are filled in here.
  let W = {};
  try { W = JSON.parse(document.body.dataset.words || '{}'); } catch (e) { W = {}; }
  function t(name, vals) {
    let s = W[name] || name;
    if (vals) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vals ? String(vals[k]) : m));
    return s;
  }

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
  $('session').textContent = t('session', { id: sessionId });

  const pending = new Map(); // step_id -> agent.user_confirm frame
  const outcomes = new Map(); // step_id -> the outcome bubble of that step
  let current = null; // step_id in the dialog
  let returnFocus = null; // what had the focus before the dialog opened
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
    setStatus(t('connecting'), 'connecting');
    const sock = new WebSocket(wsURL());
    ws = sock;
    sock.onopen = () => {
      open = true;
      everOpened = true;
      backoff = 500;
      $('hint').hidden = true;
      setStatus(t('online'), 'online');
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
      setStatus(t('offline', { s: Math.round(backoff / 100) / 10 }), 'offline');
      if (!everOpened) {
        const h = $('hint');
        h.textContent = t('noConnect');
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
        $('who').textContent = t('user', { user: f.user });
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
        addToolResult(f);
        break;
      case 'agent.user_confirm':
        // The same step again: its progress changed (a quorum's votes,
        // an escalation); the dialog keeps what is being typed.
        if (!pending.has(f.step_id)) {
          addLine('notice', t('needsConfirm', { what: f.metadata.summary || f.metadata.tool_name }));
        }
        pending.set(f.step_id, f);
        renderPending();
        if (current === f.step_id) renderProgress(f);
        else if (!current) openDialog(f.step_id);
        break;
      case 'agent.confirm_resolved':
        if (pending.has(f.step_id) || f.resolution) addOutcome(f);
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
    if (f.step_id && (f.code === 'UNAUTHORIZED' || f.code === 'UNAVAILABLE' || f.code === 'AWAITING_QUORUM')) {
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

  // --- streamed answers ---------------------------------------------------
  // agent.delta frames grow one bubble per stream_id; the agent.message with
  // the same stream_id puts the final text in it.
  const streams = new Map();

  function onDelta(f) {
    let s = streams.get(f.stream_id);
    if (!s) {
      const li = bubble('bot streaming');
      const text = document.createTextNode('');
      li.appendChild(text);
      li.setAttribute('aria-busy', 'true');
      append(li);
      s = { li: li, text: text };
      streams.set(f.stream_id, s);
    }
    s.text.data += f.content;
    s.li.scrollIntoView({ block: 'end' });
  }

  // endStream ends the stream's bubble; false when no delta of it came here
  // (the message is then added as any other).
  function endStream(f) {
    const s = streams.get(f.stream_id);
    if (!s) return false;
    streams.delete(f.stream_id);
    s.text.data = f.content;
    s.li.className = 'line ' + (f.kind === 'answer' ? 'bot' : 'notice') + (f.is_error ? ' is-error' : '');
    s.li.removeAttribute('aria-busy');
    return true;
  }

  // --- chat -------------------------------------------------------------
  // Each message is one bubble. Who wrote it is said in words for screen
  // readers (and colour for the eye), never by a glyph alone.
  function bubble(kind, isError) {
    const li = document.createElement('li');
    li.className = 'line ' + kind + (isError ? ' is-error' : '');
    const who = kind === 'user' ? t('you') : kind === 'bot' ? t('bot') : '';
    if (who) {
      const s = document.createElement('span');
      s.className = 'sr-only';
      s.textContent = who + ': ';
      li.appendChild(s);
    }
    return li;
  }

  function append(li) {
    $('log').appendChild(li);
    li.scrollIntoView({ block: 'end' });
    return li;
  }

  function addLine(kind, text, isError) {
    const li = bubble(kind, isError);
    li.appendChild(document.createTextNode(text));
    return append(li);
  }

  // A tool's result is shown once: the agent's answer that follows says
  // it (the rules model repeats it, a model words it), so the result
  // itself is a closed disclosure ("Result of sql_execute") to open on
  // demand, in the bubble of its confirmation's outcome when it had one.
  function addToolResult(f) {
    const d = document.createElement('details');
    d.className = 'result' + (f.is_error ? ' is-error' : '');
    const s = document.createElement('summary');
    s.textContent = t(f.is_error ? 'failedOf' : 'resultOf', { tool: f.tool_name });
    const pre = document.createElement('pre');
    pre.textContent = f.content;
    d.append(s, pre);
    let li = f.step_id ? outcomes.get(f.step_id) : null;
    if (!li) {
      li = append(bubble('tool', f.is_error));
      if (f.step_id) outcomes.set(f.step_id, li);
    }
    li.appendChild(d);
  }

  // addOutcome says how a confirmation ended, in the bubble its results
  // go to (created here when the outcome comes first).
  function addOutcome(f) {
    const ok = f.status === 'executed' || f.status === 'replayed';
    const text = f.decided_by ? t('outcomeBy', { status: f.status_text || f.status, who: f.decided_by })
      : t('outcome', { status: f.status_text || f.status });
    const p = document.createElement('p');
    p.className = 'outcome ' + (ok ? 'ok' : 'notice');
    p.textContent = text;
    let li = outcomes.get(f.step_id);
    if (li) {
      li.insertBefore(p, li.querySelector('details'));
      li.classList.remove('tool');
      li.classList.add(ok ? 'ok' : 'notice');
      return;
    }
    li = append(bubble(ok ? 'ok' : 'notice', false));
    li.appendChild(p);
    outcomes.set(f.step_id, li);
  }

  // The greeting: what the bot can do and requests to try, each a button
  // that puts the request in the input.
  function addGreeting() {
    let g = null;
    try { g = JSON.parse(document.body.dataset.greeting || 'null'); } catch (e) { g = null; }
    if (!g || !g.text) return;
    const li = bubble('bot greeting', false);
    const p = document.createElement('p');
    p.textContent = g.text;
    li.appendChild(p);
    if (g.examples && g.examples.length) {
      const ul = document.createElement('ul');
      ul.className = 'examples';
      ul.setAttribute('aria-label', t('try'));
      for (const ex of g.examples) {
        const item = document.createElement('li');
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'example';
        b.textContent = ex.request;
        b.addEventListener('click', () => {
          if ($('input').disabled) return;
          $('input').value = ex.request;
          $('input').focus();
        });
        const what = document.createElement('span');
        what.textContent = ' — ' + ex.what;
        item.append(b, what);
        ul.appendChild(item);
      }
      li.appendChild(ul);
    }
    append(li);
  }

  function updateInput() {
    const blocked = !open || pending.size > 0;
    $('input').disabled = blocked;
    $('send').disabled = blocked;
    $('input').placeholder = pending.size > 0 ? t('inputBlocked') : t('input');
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
    if (!(ms > 0)) return t('expired');
    const s = Math.floor(ms / 1000);
    return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  }

  function riskText(m) {
    return m.risk_text || m.risk;
  }

  function renderPending() {
    const ul = $('pending');
    ul.textContent = '';
    for (const [stepId, f] of pending) {
      const li = document.createElement('li');
      li.className = 'pending-item';
      li.dataset.step = stepId;
      const b = document.createElement('button');
      b.type = 'button';
      const risk = document.createElement('span');
      risk.className = 'risk risk-' + f.metadata.risk;
      risk.textContent = riskText(f.metadata);
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = f.metadata.tool_name;
      const left = document.createElement('span');
      left.className = 'left';
      left.textContent = remaining(f);
      b.append(risk, name, left);
      b.addEventListener('click', () => openDialog(stepId));
      li.appendChild(b);
      ul.appendChild(li);
    }
    $('none').hidden = pending.size > 0;
    $('side-toggle').textContent = pending.size > 0 ? t('pendingToggle', { n: pending.size }) : t('pendingTitle');
    updateInput();
  }

  // The side panel folds away at phone width (style.css); the button in
  // the header opens and closes it there.
  $('side-toggle').addEventListener('click', () => {
    const opened = document.body.classList.toggle('side-open');
    $('side-toggle').setAttribute('aria-expanded', String(opened));
  });

  // --- dialog -----------------------------------------------------------
  // Time of day in the reader's own zone and language.
  function clock(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    return d.toLocaleTimeString(document.documentElement.lang || undefined, { hour: '2-digit', minute: '2-digit' });
  }

  // renderRequested writes "Requested by alice · valid until 14:32 (4:58
  // left)", the time left in a span of its own that the clock updates.
  function renderRequested(f) {
    const p = $('dlg-requested');
    p.textContent = '';
    const m = f.metadata;
    const parts = t('requested', { who: m.requester, until: clock(m.expires_at), left: '\u0000' }).split('\u0000');
    p.appendChild(document.createTextNode(parts[0]));
    const left = document.createElement('span');
    left.id = 'dlg-countdown';
    left.textContent = remaining(f);
    p.appendChild(left);
    if (parts[1]) p.appendChild(document.createTextNode(parts[1]));
  }

  // renderDialog fills the dialog with what will happen first (the
  // statement or command and what it affects), the risk and why, what the
  // tool does, who asked and until when; the tool, its arguments and who
  // may approve are details.
  function renderDialog(f) {
    const m = f.metadata;
    $('dlg-what').textContent = m.preview || m.summary || m.tool_name;
    const risk = $('dlg-risk');
    // The risk in words, and why, the risk said once: a reason that starts
    // with it ("中风险：首次需要确认…") stands for both.
    const reason = m.reason || '';
    const rt = riskText(m);
    risk.textContent = reason.startsWith(rt) ? reason : rt;
    risk.className = 'risk risk-' + m.risk;
    $('dlg-reason').textContent = reason.startsWith(rt) ? '' : reason;
    $('dlg-desc').textContent = m.about || m.tool_description || m.summary || '';
    renderRequested(f);
    $('dlg-tool').textContent = m.tool_name;
    renderProgress(f);
    $('dlg-hash').textContent = m.short_hash || '';
    let args;
    try { args = JSON.stringify(m.tool_args, null, 2); } catch (e) { args = String(m.tool_args); }
    $('dlg-args').textContent = args;
    $('dlg-details').open = false;
    $('dlg-keys').textContent = isHigh(f) ? t('keysHigh') : t('keys');
  }

  // renderProgress shows who may approve, and how far the approval has
  // come: a quorum's votes, an escalation's line.
  function renderProgress(f) {
    const m = f.metadata;
    $('dlg-approvers').textContent = m.approvers || '';
    const line = [m.progress, m.escalated].filter(Boolean).join(' · ');
    $('dlg-progress').textContent = line;
    $('dlg-progress').hidden = !line;
  }

  function openDialog(stepId) {
    const f = pending.get(stepId);
    if (!f) return;
    if (!current) returnFocus = document.activeElement;
    current = stepId;
    renderDialog(f);
    $('dlg-comment').value = '';
    renderCalls(f);
    fillEdit(f);
    $('dlg-error').hidden = true;
    const asks = renderQuestions(f);
    // A MEDIUM call that may be allowed for the conversation: two approve
    // buttons, 仅本次 (grant once) and 本会话允许 (grant session).
    const grant = !!(f.card && f.card.approve_once);
    $('dlg-once').hidden = !grant;
    $('dlg-approve').textContent = grant ? t('approveSession', { window: f.card.grant_window }) : t('approve');
    // Another agent's standing rule: one more approve button (grant
    // always), labelled by the card in its own language.
    const always = !!(f.card && f.card.approve_always);
    $('dlg-always').hidden = !always;
    $('dlg-always').textContent = always ? f.card.always : '';
    $('dlg-always').title = always ? (f.card.always_how || '') : '';
    // Another agent's question: answered, never approved as it is.
    $('dlg-edit-box').hidden = asks;
    $('dlg-title').textContent = asks ? t('questionTitle') : t('title');
    $('dlg-reject').textContent = asks ? t('questionDecline') : t('reject');
    if (asks) $('dlg-approve').textContent = t('questionAnswer');
    setButtons(true);
    $('overlay').hidden = false;
    document.body.classList.add('modal');
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

  // A question (card.questions, with card.answer): per question its
  // options as radio buttons (checkboxes for a multi-select) and a text
  // input for the person's own answer. Answer sends content.edits {"#1":
  // {"answers": {"#n": {"options": [k…], "other": "…"}}}}; the server
  // checks it against the questions and binds it to the hash shown.
  function renderQuestions(f) {
    const list = $('dlg-questions-list');
    list.textContent = '';
    const qs = (f.card && f.card.answer && Array.isArray(f.card.questions)) ? f.card.questions : [];
    $('dlg-questions').hidden = qs.length === 0;
    $('dlg-questions-how').textContent = t('questionHow');
    qs.forEach((q, i) => {
      const box = document.createElement('div');
      box.className = 'question';
      const p = document.createElement('p');
      p.textContent = (i + 1) + '. ' + (q.header ? '[' + q.header + '] ' : '') + q.question + (q.multi_select ? ' ' + t('questionMulti') : '');
      box.appendChild(p);
      (q.options || []).forEach((o, j) => {
        const label = document.createElement('label');
        label.className = 'call-choice';
        const input = document.createElement('input');
        input.type = q.multi_select ? 'checkbox' : 'radio';
        input.name = 'q_' + (i + 1);
        input.dataset.question = String(i + 1);
        input.dataset.option = String(j + 1);
        label.append(input, ' ' + o.label + (o.description ? ' — ' + o.description : ''));
        box.appendChild(label);
      });
      const other = document.createElement('input');
      other.type = 'text';
      other.maxLength = 1000;
      other.placeholder = t('questionOwn');
      other.dataset.other = String(i + 1);
      box.appendChild(other);
      list.appendChild(box);
    });
    return qs.length > 0;
  }

  function questionAnswers() {
    const picks = {};
    const at = (n) => (picks['#' + n] = picks['#' + n] || {});
    for (const input of $('dlg-questions-list').querySelectorAll('input[data-option]')) {
      if (!input.checked) continue;
      const p = at(input.dataset.question);
      p.options = (p.options || []).concat([Number(input.dataset.option)]);
    }
    for (const input of $('dlg-questions-list').querySelectorAll('input[data-other]')) {
      const v = input.value.trim();
      if (v) at(input.dataset.other).other = v;
    }
    return picks;
  }

  function answerQuestions() {
    if (!current || $('dlg-approve').disabled) return;
    const picks = questionAnswers();
    if (Object.keys(picks).length === 0) {
      $('dlg-error').textContent = t('questionEmpty');
      $('dlg-error').hidden = false;
      return;
    }
    const ok = send({ type: 'user.response', session_id: sessionId, step_id: current,
      content: { confirmed: true, message: $('dlg-comment').value.trim(), edits: { '#1': { answers: picks } } } });
    if (!ok) {
      $('dlg-error').textContent = t('notConnected');
      $('dlg-error').hidden = false;
      return;
    }
    setButtons(false);
    $('dlg-error').textContent = t('running');
    $('dlg-error').hidden = false;
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
      $('dlg-error').textContent = t('editNotObject');
      $('dlg-error').hidden = false;
      return;
    }
    const edits = editCalls(pending.get(current)).length === 1 ? { '#1': parsed } : parsed;
    const ok = send({ type: 'user.response', session_id: sessionId, step_id: current,
      content: { confirmed: true, message: $('dlg-comment').value.trim(), edits: edits } });
    if (!ok) {
      $('dlg-error').textContent = t('notConnected');
      $('dlg-error').hidden = false;
      return;
    }
    setButtons(false);
    $('dlg-error').textContent = t('running');
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
    document.body.classList.remove('modal');
    updateInput();
    if (returnFocus && document.contains(returnFocus) && !returnFocus.disabled) returnFocus.focus();
    returnFocus = null;
  }

  function setButtons(enabled) {
    $('dlg-approve').disabled = !enabled;
    $('dlg-once').disabled = !enabled;
    $('dlg-always').disabled = !enabled;
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
      $('dlg-error').textContent = t('notConnected');
      $('dlg-error').hidden = false;
      return;
    }
    setButtons(false);
    $('dlg-error').textContent = confirmed ? t('running') : t('cancelling');
    $('dlg-error').hidden = false;
  }

  // focusables are the dialog's controls that take the focus, in order.
  function focusables() {
    return Array.from($('dialog').querySelectorAll('button, textarea, summary, [tabindex]'))
      .filter((el) => !el.disabled && el.offsetParent !== null);
  }

  $('dlg-approve').addEventListener('click', () => {
    if (!$('dlg-questions').hidden) answerQuestions();
    else answer(true, $('dlg-once').hidden ? '' : 'session');
  });
  $('dlg-once').addEventListener('click', () => answer(true, 'once'));
  $('dlg-always').addEventListener('click', () => answer(true, 'always'));
  $('dlg-edit-approve').addEventListener('click', () => answerEdit());
  $('dlg-reject').addEventListener('click', () => answer(false));
  document.addEventListener('keydown', (ev) => {
    if ($('overlay').hidden) return;
    if (ev.key === 'Escape') {
      ev.preventDefault();
      answer(false);
    } else if (ev.key === 'Tab') {
      // The focus stays in the dialog while it is open.
      const els = focusables();
      if (!els.length) return;
      const first = els[0];
      const last = els[els.length - 1];
      if (ev.shiftKey && (document.activeElement === first || !$('dialog').contains(document.activeElement))) {
        ev.preventDefault();
        last.focus();
      } else if (!ev.shiftKey && (document.activeElement === last || !$('dialog').contains(document.activeElement))) {
        ev.preventDefault();
        first.focus();
      }
    } else if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      // HIGH: Enter never approves, not even on 确认执行; approving
      // takes a click (or Space on the focused button). On any other
      // focused button or disclosure Enter acts as that control.
      const el = document.activeElement;
      const high = isHigh(pending.get(current));
      if (high && el === $('dlg-approve')) {
        ev.preventDefault();
        return;
      }
      if (el && (el.tagName === 'BUTTON' || el.tagName === 'SUMMARY')) return;
      if (high) {
        ev.preventDefault();
        return;
      }
      // In the arguments being edited Enter is a new line, never an
      // approval of the arguments as proposed; the edit box's button
      // approves the edit.
      if (ev.target && (ev.target.id === 'dlg-edit' || ev.target.id === 'dlg-edit-approve')) return;
      ev.preventDefault();
      // A question is answered with what is chosen, never approved bare.
      if (!$('dlg-questions').hidden) answerQuestions();
      else answer(true);
    }
  });

  setInterval(() => {
    for (const li of $('pending').children) {
      const f = pending.get(li.dataset.step);
      if (f) li.querySelector('.left').textContent = remaining(f);
    }
    if (current && pending.has(current)) $('dlg-countdown').textContent = remaining(pending.get(current));
  }, 1000);

  addGreeting();
  connect();
})();
