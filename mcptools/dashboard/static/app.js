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

  // The list: fetch the rows again when the server says they changed.
  var rows = document.getElementById('rows');
  if (rows) {
    var busy = false;
    var refreshRows = function () {
      if (busy) return;
      busy = true;
      fetch(root + '/rows', { credentials: 'same-origin' }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) {
        if (html !== null) { rows.innerHTML = html; tick(); }
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
    var tools = new Map();
    var refreshPanel = function () {
      fetch(root + '/s/' + encodeURIComponent(id) + '/panel', { credentials: 'same-origin' }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) {
        if (html !== null) { panel.innerHTML = html; tick(); }
      });
    };
    var clear = function (note) {
      steps.textContent = '';
      tools.clear();
      if (note) steps.appendChild(el('div', 'note', note));
    };
    var add = function (s) {
      switch (s.kind) {
        case 'text': {
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
        case 'permission':
          steps.appendChild(el('div', 'step step-permission' + (s.isError ? ' error' : ''), 'permission: ' + s.text));
          break;
        case 'done':
          steps.appendChild(el('div', 'step step-done' + (s.isError ? ' error' : ''), s.isError ? 'turn failed: ' + s.text : 'turn ended'));
          if (status) status.textContent = 'ended';
          refreshPanel();
          break;
        case 'turn_started':
          if (status) status.textContent = 'running';
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
      if (status) status.textContent = t.done ? 'ended' : 'running';
      refreshPanel();
    });
    es.addEventListener('resync', function () {
      clear('(the page fell behind; showing the turn again)');
    });
    es.addEventListener('step', function (e) { add(JSON.parse(e.data)); });
    es.addEventListener('panel', refreshPanel);
  }
})();
