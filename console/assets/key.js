// The API key field: the key is entered once and kept for the tab
// (api.js). onChange is called whenever it is set or forgotten.
import { getKey, setKey } from './api.js';

export function startKey({ form, input, forget, state }, onChange) {
  const show = () => {
    state.textContent = getKey() ? 'key set for this tab' : 'no key';
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    setKey(input.value.trim());
    input.value = '';
    show();
    onChange();
  });
  forget.addEventListener('click', () => {
    setKey('');
    show();
    onChange();
  });
  show();
}
