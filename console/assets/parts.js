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
// by its name and type only (downloads come later).
export function partBlock(part) {
  if (typeof part.text === 'string') return textBlock(part.text);
  if (part.data !== undefined) {
    const pre = document.createElement('pre');
    pre.className = 'text data';
    pre.textContent = JSON.stringify(part.data, null, 2);
    return pre;
  }
  const f = part.file || {}; // 0.3
  const p = textBlock('[file ' + (part.filename || f.name || '') + ' ' + (part.mediaType || f.mimeType || '') + ']');
  p.classList.add('file');
  return p;
}

// messageText is the text of a message's text parts, joined.
export function messageText(m) {
  return ((m && m.parts) || []).filter((p) => typeof p.text === 'string').map((p) => p.text).join(' ');
}

// terminal reports whether a state (as stateName gives it) ends the task.
export function terminal(state) {
  return ['completed', 'canceled', 'failed', 'rejected'].includes(state);
}
