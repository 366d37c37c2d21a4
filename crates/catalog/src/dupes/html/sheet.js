// The contact sheet's script (crates/catalog/src/dupes/html/mod.rs says what the page is).
// Everything from the catalog goes into the page as text (textContent), never as HTML.
(function () {
  'use strict';
  // The groups are in one island a page (`per_page` groups, one a line) after the head
  // island: only the pages shown (or decided on) are read and parsed.
  var data = JSON.parse(document.getElementById('groups').textContent);
  var islands = Array.prototype.slice.call(document.querySelectorAll('script.page'));
  var total = data.total;
  var per = data.per_page;
  var parsed = new Map();
  function group(i) {
    var g = parsed.get(i);
    if (!g) {
      var first = i - i % per;
      var lines = islands[first / per].textContent.split('\n');
      for (var j = 0, n = 0; j < lines.length; j++) {
        if (!lines[j]) continue;
        var one = JSON.parse(lines[j]);
        // Each member names its content by its index in the group's list of contents.
        for (var k = 0; k < one.members.length; k++) one.members[k].b = one.c[one.members[k].b];
        parsed.set(first + n++, one);
      }
      g = parsed.get(i);
    }
    return g;
  }
  var pages = Math.max(1, Math.ceil(total / per));
  var thumbs = encodeURIComponent(data.thumbs) + '/';
  var main = document.getElementById('sheet');
  var body = document.body;
  // Group index -> {choice: null | 'keeper' | 'keep-all' | 'not-duplicates', keeper: member
  // index, apart: Set of "blake3 blake3" (a file marked not a duplicate of the keeper)}.
  var decided = new Map();
  var unsaved = false;
  var page = 0;
  var showing = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function button(text, action, cls) {
    var b = el('button', cls, text);
    b.type = 'button';
    b.dataset.action = action;
    return b;
  }

  // As the command line prints them (indicatif's HumanBytes).
  function bytes(n) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    var v = n;
    var i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return i === 0 ? n + ' B' : v.toFixed(2) + ' ' + units[i];
  }

  function isDuplicate(g) {
    return g.kind === 'exact' || g.kind === 'similar';
  }

  function suggested(g) {
    for (var j = 0; j < g.members.length; j++) if (g.members[j].k) return j;
    return 0;
  }

  function keeperOf(i) {
    var s = decided.get(i);
    return s && s.choice === 'keeper' ? s.keeper : suggested(group(i));
  }

  function pairKey(a, b) {
    return [a, b].sort().join(' ');
  }

  function heading(g) {
    var n = g.members.length;
    var text = g.kind + ' \u00b7 ' + n + ' files';
    if (g.kind === 'burst') text += ' \u00b7 not duplicates: pick yourself';
    else if (g.kind === 'pair') {
      text += ' \u00b7 ' + (g.link === 'live-photo' ? "a Live Photo's still and video" :
        "a raw file and the camera's JPEG") + ', one shot, kept together: not duplicates';
    }
    else text += ' \u00b7 ' + bytes(g.saving) + ' freed by keeping the marked one';
    return el('h2', null, text);
  }

  function figure(g, j) {
    var m = g.members[j];
    var fig = el('figure');
    fig.dataset.member = j;
    if (m.th) {
      var img = el('img');
      img.alt = '';
      img.width = m.th[0];
      img.height = m.th[1];
      img.decoding = 'async';
      img.src = thumbs + m.b + '.jpg';
      fig.append(img);
    } else {
      fig.append(el('div', 'none', 'no thumbnail'));
    }
    var cap = el('figcaption');
    // Shown by render() on a duplicate group's keeper; bursts and pairs have none.
    var mark = el('span', 'mark');
    mark.hidden = true;
    cap.append(mark, ' ');
    // A file index found damaged says so first, and why.
    if (m.dm) cap.append(el('span', 'damaged', 'damaged: ' + m.dm), ' ');
    var facts = [bytes(m.s)];
    if (m.d) facts.push(m.d);
    if (m.t) facts.push(m.t);
    if (m.c) facts.push(m.c);
    if (j > 0) {
      if (g.kind === 'similar' && m.b === g.members[0].b) facts.push('identical to the first file');
      else if (m.x !== undefined) facts.push('pHash distance ' + m.x);
    }
    cap.append(facts.join(' \u00b7 '), el('br'), el('span', 'path', m.p));
    if (g.kind === 'similar') {
      var apart = button('Not a duplicate of the keeper', 'apart', 'apart');
      cap.append(el('br'), apart);
    }
    fig.append(cap);
    return fig;
  }

  function section(i) {
    var g = group(i);
    var sec = el('section', 'group ' + g.kind);
    sec.dataset.group = i;
    sec.append(heading(g));
    if (isDuplicate(g)) {
      sec.classList.add('choose');
      var actions = el('div', 'actions');
      actions.append(
        button('Keep all', 'keep-all', 'keep-all'),
        button('Not duplicates', 'not-duplicates', 'not-duplicates'),
        button('Undo', 'undo', 'undo'),
        el('span', 'status')
      );
      sec.append(actions);
    }
    var files = el('div', 'files');
    for (var j = 0; j < g.members.length; j++) files.append(figure(g, j));
    sec.append(files);
    paint(sec, i);
    return sec;
  }

  // Shows group i's decisions on its section.
  function paint(sec, i) {
    var g = group(i);
    if (!isDuplicate(g)) return;
    var s = decided.get(i);
    var choice = s ? s.choice : null;
    var keeper = keeperOf(i);
    var whole = choice === 'keep-all' || choice === 'not-duplicates';
    var figs = sec.querySelectorAll('figure');
    for (var j = 0; j < figs.length; j++) {
      var fig = figs[j];
      var m = g.members[j];
      var isKeeper = !whole && j === keeper;
      fig.classList.toggle('keeper', isKeeper);
      fig.classList.toggle('kept-all', whole);
      var mark = fig.querySelector('.mark');
      mark.hidden = !isKeeper && !whole;
      mark.textContent = whole ? 'keep' : choice === 'keeper' ? 'keep' : 'keep (suggested)';
      mark.classList.toggle('suggested', isKeeper && choice !== 'keeper');
      var apart = fig.querySelector('button.apart');
      if (apart) {
        var other = g.members[keeper].b;
        var on = !!s && s.apart.has(pairKey(other, m.b));
        apart.hidden = whole || j === keeper || m.b === other;
        apart.classList.toggle('on', on);
        fig.classList.toggle('apart', on && !apart.hidden);
      }
    }
    sec.querySelector('button.keep-all').classList.toggle('on', choice === 'keep-all');
    sec.querySelector('button.not-duplicates').classList.toggle('on', choice === 'not-duplicates');
    sec.querySelector('button.undo').disabled = !s;
    var status = !choice ? 'not decided' :
      choice === 'keeper' ? 'keeper picked' :
      choice === 'keep-all' ? 'keep all' : 'not duplicates';
    if (s && s.apart.size) status += ' \u00b7 ' + s.apart.size + ' marked not a duplicate of the keeper';
    sec.querySelector('.status').textContent = status;
    sec.classList.toggle('decided', !!s);
  }

  function decisions() {
    var list = [];
    var order = Array.from(decided.keys()).sort(function (a, b) { return a - b; });
    order.forEach(function (i) {
      var g = group(i);
      var s = decided.get(i);
      var contents = Array.from(new Set(g.members.map(function (m) { return m.b; }))).sort();
      if (s.choice === 'keeper') {
        var m = g.members[s.keeper];
        var d = { decision: 'keeper', contents: contents, keeper: m.b, path: m.p };
        if (m.pb) d.path_bytes = m.pb;
        list.push(d);
      } else if (s.choice) {
        list.push({ decision: s.choice, contents: contents });
      }
      Array.from(s.apart).sort().forEach(function (key) {
        list.push({ decision: 'not-duplicates', contents: key.split(' ') });
      });
    });
    return list;
  }

  function save() {
    var doc = { seekless_decisions: 1, db: data.db, decisions: decisions() };
    var blob = new Blob([JSON.stringify(doc, null, 2) + '\n'], { type: 'application/json' });
    var a = el('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'seekless-decisions.json';
    body.append(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 60000);
    unsaved = false;
  }

  main.addEventListener('click', function (ev) {
    var sec = ev.target.closest('section');
    if (!sec) return;
    var i = Number(sec.dataset.group);
    var g = group(i);
    if (!isDuplicate(g)) return;
    var s = decided.get(i) || { choice: null, keeper: suggested(g), apart: new Set() };
    var btn = ev.target.closest('button');
    if (btn) {
      var action = btn.dataset.action;
      if (action === 'keep-all' || action === 'not-duplicates') {
        s.choice = s.choice === action ? null : action;
      } else if (action === 'undo') {
        s = null;
      } else if (action === 'apart') {
        var m = g.members[Number(btn.closest('figure').dataset.member)];
        var key = pairKey(g.members[keeperOf(i)].b, m.b);
        if (s.apart.has(key)) s.apart.delete(key);
        else s.apart.add(key);
      }
    } else {
      var fig = ev.target.closest('figure');
      if (!fig) return;
      s.choice = 'keeper';
      s.keeper = Number(fig.dataset.member);
    }
    if (s && (s.choice || s.apart.size)) decided.set(i, s);
    else decided.delete(i);
    unsaved = true;
    paint(sec, i);
    counts();
  });

  // The pagers: top (sticky, with Save) and bottom.
  var top = document.getElementById('pager');
  var prev = button('\u2039 Previous', 'prev');
  var next = button('Next \u203a', 'next');
  var input = el('input');
  input.type = 'number';
  input.min = 1;
  input.max = pages;
  input.setAttribute('aria-label', 'page');
  var where = el('span');
  var count = el('span', 'decided');
  var saveButton = button('Save decisions', 'save', 'save');
  top.append(prev, 'Page', input, 'of ' + pages, next, where, count, saveButton);
  var bottom = document.getElementById('pager-end');
  bottom.append(button('\u2039 Previous', 'prev'), button('Next \u203a', 'next'));
  [top, bottom].forEach(function (nav) {
    nav.addEventListener('click', function (ev) {
      var b = ev.target.closest('button');
      if (!b) return;
      if (b.dataset.action === 'prev') show(page - 1, true);
      else if (b.dataset.action === 'next') show(page + 1, true);
      else if (b.dataset.action === 'save') save();
    });
  });
  input.addEventListener('change', function () {
    var p = Number(input.value);
    if (p >= 1) show(Math.floor(p) - 1, true);
  });

  function counts() {
    var n = decisions().length;
    count.textContent = n ? n + (n === 1 ? ' decision' : ' decisions') : '';
    saveButton.disabled = n === 0;
  }

  // Shows page p; once its thumbnails are decoded (or failed), says so on <body>
  // (data-page, data-thumbs-loaded, data-thumbs-shown) and marks "page-ready".
  function show(p, scroll) {
    page = Math.min(Math.max(0, p), pages - 1);
    var token = ++showing;
    delete body.dataset.page;
    parsed.forEach(function (g, i) { if (!decided.has(i)) parsed.delete(i); });
    var frag = document.createDocumentFragment();
    var end = Math.min(total, (page + 1) * per);
    for (var i = page * per; i < end; i++) frag.append(section(i));
    main.replaceChildren(frag);
    input.value = page + 1;
    where.textContent = total ?
      'groups ' + (page * per + 1) + '\u2013' + end + ' of ' + total : 'no groups';
    var pagers = document.querySelectorAll('nav button');
    for (var k = 0; k < pagers.length; k++) {
      var a = pagers[k].dataset.action;
      if (a === 'prev') pagers[k].disabled = page === 0;
      if (a === 'next') pagers[k].disabled = page === pages - 1;
    }
    if (scroll) window.scrollTo(0, 0);
    var imgs = Array.from(main.querySelectorAll('img'));
    Promise.all(imgs.map(function (img) {
      return img.decode().then(function () { return 1; }, function () { return 0; });
    })).then(function (done) {
      if (token !== showing) return;
      var n = done.reduce(function (a, b) { return a + b; }, 0);
      document.getElementById('thumbs-loaded').textContent = n + ' of ' + imgs.length;
      body.dataset.thumbsLoaded = n;
      body.dataset.thumbsShown = imgs.length;
      body.dataset.page = page + 1;
      performance.mark('page-ready');
    });
  }

  addEventListener('beforeunload', function (ev) {
    if (unsaved && decided.size) ev.preventDefault();
  });

  counts();
  show(0, false);
})();
