// The raw view: any JSON-RPC request, written or edited by hand, sent to
// an agent's endpoint (or /a2a) with the chosen A2A-Version, and what
// comes back shown as it arrives: the answer, or each event of a stream.
// A chat answer's "Edit in Raw" brings its request here.
import { rawCall, newID } from './api.js';

const template = (version) => JSON.stringify(version === '0.3'
  ? { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: newID(), parts: [{ kind: 'text', text: 'hello' }] } } }
  : { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { role: 'ROLE_USER', messageId: newID(), parts: [{ text: 'hello' }] } } },
null, 2);

export function startRaw({ form, agent, version, body, send, out, status }) {
  body.value = template(version.value);

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    out.replaceChildren();
    try {
      JSON.parse(body.value);
    } catch (e) {
      // Sent all the same: the edge's answer to bad JSON is worth seeing.
      status.textContent = 'not JSON (' + e.message + '); sent as written';
    }
    send.disabled = true;
    const t0 = performance.now();
    try {
      const code = await rawCall(agent.value, version.value, body.value, (text) => {
        const pre = document.createElement('pre');
        let shown = text;
        try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* as it came */ }
        pre.textContent = shown;
        out.append(pre);
      });
      status.textContent = 'HTTP ' + code + ' in ' + Math.round(performance.now() - t0) + ' ms';
    } catch (e) {
      status.textContent = 'failed: ' + e.message;
    } finally {
      send.disabled = false;
    }
  });

  return {
    // edit puts a request (its agent, version and body) in the editor.
    edit(agentName, versionName, text) {
      agent.value = agentName;
      version.value = versionName;
      try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* as it was */ }
      body.value = text;
      out.replaceChildren();
      status.textContent = '';
    },
    setAgents(names) {
      const have = Array.from(agent.options, (o) => o.value).slice(1);
      if (have.join('\n') === names.join('\n')) return;
      const current = agent.value;
      const mesh = document.createElement('option');
      mesh.value = '';
      mesh.textContent = '/a2a (the mesh)';
      agent.replaceChildren(mesh, ...names.map((n) => {
        const o = document.createElement('option');
        o.value = n;
        o.textContent = n;
        return o;
      }));
      agent.value = names.includes(current) ? current : '';
    },
  };
}
