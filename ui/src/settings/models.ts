/**
 * The Models form: a provider as typed, checked before it is saved. The key never goes into the
 * settings: it is sent on its own (`set_model_key`) to the sign-in store.
 */
import type { ModelsSettings } from '../lib/bindings/ModelsSettings';
import type { ProviderConfig } from '../lib/bindings/ProviderConfig';
import type { ProviderKind } from '../lib/bindings/ProviderKind';

export const KINDS: { value: ProviderKind; label: string; base: string }[] = [
  { value: 'openai', label: 'OpenAI-compatible (OpenAI, Ollama, LM Studio, llama.cpp, vLLM)', base: 'https://api.openai.com/v1' },
  { value: 'anthropic', label: 'Anthropic Messages API', base: 'https://api.anthropic.com' },
];

export type ProviderText = { name: string; kind: ProviderKind; base_url: string; models: string; key: string };

export const emptyProvider = (): ProviderText => ({ name: '', kind: 'openai', base_url: '', models: '', key: '' });

export type ProviderField = 'name' | 'base_url' | 'models' | 'key';

export type ParsedProvider =
  | { ok: true; provider: ProviderConfig; key: string | null }
  | { ok: false; errors: Partial<Record<ProviderField, string>> };

/** The provider the form says (an empty base URL is the hosted service's), or each field's error. */
export function parseProvider(t: ProviderText, existing: ModelsSettings): ParsedProvider {
  const errors: Partial<Record<ProviderField, string>> = {};
  const name = t.name.trim();
  if (name === '' || name.length > 100) errors.name = 'a name of 1 to 100 characters';
  else if (existing.providers.some((p) => p.name === name)) errors.name = 'a provider has this name already';
  const base = t.base_url.trim() || (KINDS.find((k) => k.value === t.kind)?.base ?? '');
  let url: URL | null = null;
  try {
    url = new URL(base);
  } catch {
    errors.base_url = 'a URL such as http://localhost:11434/v1';
  }
  if (url && !['http:', 'https:'].includes(url.protocol)) errors.base_url = 'http or https';
  else if (url && (url.username || url.password)) errors.base_url = 'no user name or password: the key has its own field';
  const ids = t.models
    .split(/[\s,]+/)
    .map((m) => m.trim())
    .filter((m) => m !== '');
  if (ids.length === 0) errors.models = 'at least one model id, such as llama3.2';
  const key = t.key.trim();
  if (/\s/.test(key)) errors.key = 'a key has no spaces';
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return {
    ok: true,
    provider: { name, kind: t.kind, base_url: base, models: ids.map((id) => ({ id })) },
    key: key === '' ? null : key,
  };
}

/** The section with `provider` added at the end. */
export const withProvider = (s: ModelsSettings, provider: ProviderConfig): ModelsSettings => ({
  providers: [...s.providers, provider],
});

/** The section without the provider of that name. */
export const withoutProvider = (s: ModelsSettings, name: string): ModelsSettings => ({
  providers: s.providers.filter((p) => p.name !== name),
});
