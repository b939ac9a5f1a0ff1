// The dashboard's one script: it follows the pages' event streams and
// shows what comes as text only (textContent; HTML fragments come from
// the server, which escapes every value it writes). No inline script
// anywhere: the Content-Security-Policy allows only this file.
(function () {
  'use strict';

  // The path the pages are under: /ui over HTTP, /ui/<random> on stdio
  // (the sign-in cookie's path), given by the page.
  var rootMeta = document.querySelector('meta[name="ui-root"]');
  var root = rootMeta ? rootMeta.content : '/ui';

  function fmt(s) {
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    return (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + r + 's';
  }
  function tick() {
    document.querySelectorAll('[data-since]').forEach(function (el) {
      var s = Math.max(0, Math.round((Date.now() - Number(el.dataset.since)) / 1000));
      el.textContent = fmt(s);
    });
  }
  setInterval(tick, 1000);

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // The tab's title counts the sessions waiting for a permission answer:
  // "(2) Sessions · claude-agent-mcp".
  function countWaiting(n) {
    var base = document.title.replace(/^\(\d+\) /, '');
    document.title = n > 0 ? '(' + n + ') ' + base : base;
  }

  // The list: fetch the rows again when the server says they changed —
  // the page of stored sessions this page was opened with (its query:
  // the cursor and the filters).
  var rows = document.getElementById('rows');
  if (rows) {
    var busy = false;
    var refreshRows = function () {
      if (busy) return;
      busy = true;
      fetch(root + '/rows' + location.search, { credentials: 'same-origin' }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) {
        if (html !== null) {
          rows.innerHTML = html;
          tick();
          var table = rows.querySelector('table.sessions');
          if (table) countWaiting(Number(table.dataset.waiting || 0));
        }
      }).finally(function () { busy = false; });
    };
    var les = new EventSource(root + '/events');
    les.addEventListener('changed', refreshRows);
  }

  // A session: the running turn, live.
  var steps = document.getElementById('steps');
  var panel = document.getElementById('panel');
  if (steps && panel) {
    var id = steps.dataset.session;
    var status = document.getElementById('live-status');
    var partial = document.getElementById('partial');
    var writing = document.getElementById('writing');
    var history = document.getElementById('history');
    var compose = document.getElementById('compose');
    var note = document.getElementById('compose-status');
    var tools = new Map();
    var fragment = function (part, into) {
      fetch(root + '/s/' + encodeURIComponent(id) + '/' + part, { credentials: 'same-origin' }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) {
        if (html !== null) { into.innerHTML = html; tick(); }
      });
    };
    var refreshPanel = function () {
      fragment('panel', panel);
      if (history) fragment('history', history);
    };
    // The text being written, marked live: grows with each "partial",
    // replaced by the whole text's step, gone when the turn ends.
    var setPartial = function (text, append) {
      if (!partial) return;
      partial.textContent = append ? partial.textContent + text : text;
      if (writing) writing.hidden = partial.textContent === '';
    };
    // The compose form: "Send as a prompt" while the session is idle,
    // "Steer the running turn" while a turn runs. When the turn ends,
    // nothing is written any more, and what the form said of it ("Sent",
    // "Steered") is over.
    var setRunning = function (running) {
      if (status) status.textContent = running ? 'running' : 'ended';
      if (!running) {
        setPartial('', false);
        if (note) { note.textContent = ''; note.className = 'dim'; }
      }
      if (!compose) return;
      compose.querySelector('#send').disabled = running;
      compose.querySelector('#steer').disabled = !running;
    };
    var clear = function (why) {
      steps.textContent = '';
      tools.clear();
      setPartial('', false);
      if (why) steps.appendChild(el('div', 'note', why));
    };
    var add = function (s) {
      switch (s.kind) {
        case 'text': {
          setPartial('', false);
          var t = el('div', 'step step-text' + (s.isError ? ' error' : ''));
          t.appendChild(el('pre', '', s.text));
          steps.appendChild(t);
          break;
        }
        case 'thinking': {
          var d = el('details', 'step step-thinking');
          d.appendChild(el('summary', '', 'thinking'));
          d.appendChild(el('pre', '', s.text));
          steps.appendChild(d);
          break;
        }
        case 'tool_started': {
          var td = el('details', 'step step-tool');
          td.open = true;
          var sum = el('summary', '', 'tool ' + s.tool);
          td.appendChild(sum);
          td.appendChild(el('pre', 'input', s.text));
          var out = el('pre', 'output', '…');
          td.appendChild(out);
          tools.set(s.toolId, { box: td, sum: sum, out: out });
          steps.appendChild(td);
          break;
        }
        case 'tool_finished': {
          var tool = tools.get(s.toolId);
          if (!tool) {
            var fd = el('details', 'step step-tool');
            var fs = el('summary', '', 'tool ' + (s.tool || '(unknown)'));
            fd.appendChild(fs);
            var fo = el('pre', 'output');
            fd.appendChild(fo);
            steps.appendChild(fd);
            tool = { box: fd, sum: fs, out: fo };
          }
          tool.out.textContent = s.text;
          tool.box.open = false;
          if (s.isError) { tool.box.classList.add('error'); tool.sum.textContent += ' (failed)'; }
          break;
        }
        case 'steer': {
          var st = el('div', 'step step-steer');
          st.appendChild(el('div', 'who', 'steered into the turn'));
          st.appendChild(el('pre', '', s.text));
          steps.appendChild(st);
          break;
        }
        case 'permission':
          steps.appendChild(el('div', 'step step-permission' + (s.isError ? ' error' : ''), 'permission: ' + s.text));
          break;
        case 'done':
          steps.appendChild(el('div', 'step step-done' + (s.isError ? ' error' : ''), s.isError ? 'turn failed: ' + s.text : 'turn ended'));
          setRunning(false);
          refreshPanel();
          break;
        case 'turn_started':
          setRunning(true);
          break;
        case 'limited':
        case 'limit_warning':
          steps.appendChild(el('div', 'step limited', s.text));
          refreshPanel();
          break;
        default:
          steps.appendChild(el('div', 'step note', s.text));
      }
    };
    var es = new EventSource(root + '/events?session=' + encodeURIComponent(id));
    es.addEventListener('turn', function (e) {
      var t = JSON.parse(e.data);
      clear();
      setRunning(!t.done);
      refreshPanel();
    });
    // The turn's prompt, first in its steps (it may come after the first
    // steps, when the page opened as the turn started).
    es.addEventListener('prompt', function (e) {
      var p = JSON.parse(e.data);
      var box = el('div', 'step step-prompt' + (p.steered ? ' steered' : ''));
      box.appendChild(el('div', 'who', p.steered ? 'steered messages, answered in a turn of their own' : 'prompt'));
      box.appendChild(el('pre', '', p.text));
      steps.insertBefore(box, steps.firstChild);
    });
    es.addEventListener('partial', function (e) {
      var p = JSON.parse(e.data);
      setPartial(p.text, !p.reset);
    });
    es.addEventListener('resync', function () {
      clear('(the page fell behind; showing the turn again)');
    });
    es.addEventListener('step', function (e) { add(JSON.parse(e.data)); });
    es.addEventListener('panel', refreshPanel);
    if (compose) {
      // Sent without leaving the page: the answer is shown beside the form.
      compose.addEventListener('submit', function (ev) {
        ev.preventDefault();
        var button = ev.submitter || compose.querySelector('button:not([disabled])');
        var form = new FormData(compose);
        note.textContent = 'sending…';
        fetch(button.getAttribute('formaction') || compose.action, {
          method: 'POST', credentials: 'same-origin', body: new URLSearchParams(form),
          headers: { 'X-Requested-With': 'dashboard' }
        }).then(function (r) {
          return r.text().then(function (t) {
            note.textContent = t.trim();
            note.className = r.ok ? 'ok' : 'error';
            if (r.ok) compose.querySelector('textarea').value = '';
          });
        }).catch(function (err) { note.textContent = 'not sent: ' + err; note.className = 'error'; });
      });
    }
  }
})();
