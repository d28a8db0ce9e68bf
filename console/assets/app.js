// The console's entry point: the key field, the tabs, and the views.
import { startKey } from './key.js';
import { startFleet } from './fleet.js';
import { startChat } from './chat.js';

const $ = (id) => document.getElementById(id);

const chat = startChat({
  form: $('chat-form'), agent: $('chat-agent'), version: $('chat-version'), input: $('chat-input'),
  send: $('chat-send'), reset: $('chat-new'), log: $('chat-log'),
});
const fleet = startFleet({ body: $('fleet-body'), state: $('fleet-state') }, chat.setAgents);
startKey({ form: $('key-form'), input: $('key-input'), forget: $('key-forget'), state: $('key-state') },
  () => fleet.refresh());

const views = ['fleet', 'chat'];
function show(view) {
  for (const v of views) {
    $('view-' + v).hidden = v !== view;
    $('tab-' + v).setAttribute('aria-pressed', String(v === view));
  }
}
for (const v of views) $('tab-' + v).addEventListener('click', () => show(v));

fleet.refresh();
