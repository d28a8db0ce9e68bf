// How the console shows A2A objects of either version: results, states
// and parts. Everything from an agent is set as text, never as markup.

// as10 gives a 0.3 result (a kind on the object) the 1.0 shape (the
// object under a member named for its kind). Parts and states of both
// versions are read alike by the functions below.
export function as10(r) {
  switch (r.kind) {
    case 'task': return { task: r };
    case 'status-update': return { statusUpdate: r };
    case 'artifact-update': return { artifactUpdate: r };
    case 'message': return { message: r };
  }
  return r;
}

// stateName turns TASK_STATE_INPUT_REQUIRED (1.0) and input-required
// (0.3) into input-required.
export function stateName(s) {
  return String(s || '').replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-');
}

export function textBlock(text) {
  const p = document.createElement('p');
  p.className = 'text';
  p.textContent = text;
  return p;
}

// partBlock shows one part: text as text, data as indented JSON, a file
// by its name, type and size with a Download button (fileBlock).
export function partBlock(part) {
  if (typeof part.text === 'string') return textBlock(part.text);
  if (part.data !== undefined && part.kind !== 'file') {
    const pre = document.createElement('pre');
    pre.className = 'text data';
    pre.textContent = JSON.stringify(part.data, null, 2);
    return pre;
  }
  const f = part.file || {}; // 0.3: {kind: 'file', file: {name, mimeType, bytes | uri}}
  return fileBlock(part.filename || f.name || '', part.mediaType || f.mimeType || '',
    part.raw ?? f.bytes, part.url ?? f.uri);
}

// fileBlock offers a file from an agent. Bytes are never shown inline nor
// opened: Download saves them under a safe name (safeName) as
// application/octet-stream, whatever type the agent claims. A file by URL
// is shown as its URL in text, not as a link.
function fileBlock(name, type, b64, url) {
  const p = document.createElement('p');
  p.className = 'text file';
  const safe = safeName(name);
  if (typeof b64 === 'string') {
    let bytes = null;
    try {
      bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    } catch (e) { /* not base64 */ }
    p.textContent = 'file ' + safe + (type ? ' (' + type + ')' : '') +
      (bytes ? ', ' + bytes.length + ' bytes ' : ': not valid base64');
    if (bytes) {
      const btn = document.createElement('button');
      btn.type = 'button';
      btn.className = 'download';
      btn.textContent = 'Download';
      btn.addEventListener('click', () => download(bytes, safe));
      p.append(btn);
    }
    return p;
  }
  p.textContent = 'file ' + safe + (type ? ' (' + type + ')' : '') + (url ? ' at ' + url : '');
  return p;
}

function download(bytes, name) {
  const href = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  a.rel = 'noopener';
  a.click();
  setTimeout(() => URL.revokeObjectURL(href), 10000);
}

// safeName is a file name from an agent made safe to save: its last path
// segment, characters other than letters, digits, space, dot, dash and
// underscore replaced by _, no leading dot, at most 100 characters.
export function safeName(name) {
  const last = String(name || '').split(/[\\/]/).pop();
  const s = last.replace(/[^A-Za-z0-9 ._-]/g, '_').replace(/^[. ]+/, '').slice(0, 100).trim();
  return s || 'download';
}

// messageText is the text of a message's text parts, joined.
export function messageText(m) {
  return ((m && m.parts) || []).filter((p) => typeof p.text === 'string').map((p) => p.text).join(' ');
}

// terminal reports whether a state (as stateName gives it) ends the task.
export function terminal(state) {
  return ['completed', 'canceled', 'failed', 'rejected'].includes(state);
}
