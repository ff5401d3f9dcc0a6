//! Which configured model answers a request.
//!
//! The rule, over every model of every provider in the settings' order:
//! 1. **Hints narrow.** The server's hints are tried in its order; the first hint whose name is
//!    contained (ignoring ASCII case) in at least one model id keeps only the models it is
//!    contained in. Hints that match nothing are skipped: the spec makes them advisory, and a
//!    server naming a model the user does not have should still get an answer.
//! 2. **Priorities rank.** Each remaining model scores
//!    `cost_priority × (10 − cost) + speed_priority × speed + intelligence_priority × intelligence`,
//!    with the user's ratings (0..=10, an unrated attribute counting 5) and the server's
//!    priorities (0..=1, an absent one counting 0). The highest score wins.
//! 3. **Ties go to the user's order**: the earlier provider, then the earlier model. With no
//!    preferences at all this is the first model of the first provider.

use crate::config::{MAX_RATING, MIDDLE_RATING, ModelEntry, ModelsSettings, ProviderConfig};
use crate::wire::Preferences;

/// A configured model, by reference into the settings.
#[derive(Debug, Clone, Copy)]
pub struct Choice<'a> {
    pub provider: &'a ProviderConfig,
    pub model: &'a ModelEntry,
}

/// The model the rule picks; `None` when no model is configured.
pub fn choose<'a>(settings: &'a ModelsSettings, prefs: &Preferences) -> Option<Choice<'a>> {
    let all: Vec<Choice<'a>> = settings
        .providers
        .iter()
        .flat_map(|p| p.models.iter().map(move |m| Choice { provider: p, model: m }))
        .collect();
    let mut candidates = all.clone();
    for hint in &prefs.hints {
        let hint = hint.to_ascii_lowercase();
        let matching: Vec<Choice<'a>> =
            all.iter().copied().filter(|c| c.model.id.to_ascii_lowercase().contains(&hint)).collect();
        if !matching.is_empty() {
            candidates = matching;
            break;
        }
    }
    let mut best: Option<(f64, Choice<'a>)> = None;
    for c in candidates {
        let s = score(c.model, prefs);
        // Strictly greater: an equal score keeps the earlier one.
        if best.as_ref().is_none_or(|(b, _)| s > *b) {
            best = Some((s, c));
        }
    }
    best.map(|(_, c)| c)
}

fn score(m: &ModelEntry, prefs: &Preferences) -> f64 {
    let rating = |r: Option<u8>| f64::from(r.unwrap_or(MIDDLE_RATING).min(MAX_RATING));
    let cheapness = f64::from(MAX_RATING) - rating(m.cost);
    prefs.cost.unwrap_or(0.0) * cheapness
        + prefs.speed.unwrap_or(0.0) * rating(m.speed)
        + prefs.intelligence.unwrap_or(0.0) * rating(m.intelligence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    fn rated(id: &str, cost: u8, speed: u8, intelligence: u8) -> ModelEntry {
        ModelEntry { id: id.into(), cost: Some(cost), speed: Some(speed), intelligence: Some(intelligence) }
    }

    fn settings() -> ModelsSettings {
        ModelsSettings {
            providers: vec![
                ProviderConfig {
                    name: "local".into(),
                    kind: ProviderKind::OpenAi,
                    base_url: "http://localhost:11434/v1".into(),
                    models: vec![ModelEntry::new("llama3.2"), rated("qwen2.5-coder", 0, 9, 4)],
                    timeout_secs: None,
                },
                ProviderConfig {
                    name: "claude".into(),
                    kind: ProviderKind::Anthropic,
                    base_url: "https://api.anthropic.com".into(),
                    models: vec![rated("claude-haiku-4-5", 3, 8, 6), rated("claude-sonnet-4-5", 7, 5, 9)],
                    timeout_secs: None,
                },
            ],
        }
    }

    fn pick(prefs: Preferences) -> String {
        let s = settings();
        let c = choose(&s, &prefs).expect("a model");
        format!("{}/{}", c.provider.name, c.model.id)
    }

    #[test]
    fn with_no_preferences_the_first_configured_model_answers() {
        assert_eq!(pick(Preferences::default()), "local/llama3.2");
    }

    #[test]
    fn the_first_hint_that_matches_a_model_wins_and_case_does_not_matter() {
        let prefs = Preferences { hints: vec!["gpt-5".into(), "SONNET".into(), "llama".into()], ..Default::default() };
        assert_eq!(pick(prefs), "claude/claude-sonnet-4-5");
    }

    #[test]
    fn a_hint_matching_several_models_leaves_the_priorities_to_choose_among_them() {
        let prefs = Preferences { hints: vec!["claude".into()], speed: Some(1.0), ..Default::default() };
        assert_eq!(pick(prefs), "claude/claude-haiku-4-5");
        let prefs = Preferences { hints: vec!["claude".into()], intelligence: Some(1.0), ..Default::default() };
        assert_eq!(pick(prefs), "claude/claude-sonnet-4-5");
    }

    #[test]
    fn priorities_alone_rank_every_model_with_unrated_ones_in_the_middle() {
        // Cheapest: qwen (cost 0) beats the unrated llama (5).
        assert_eq!(pick(Preferences { cost: Some(1.0), ..Default::default() }), "local/qwen2.5-coder");
        assert_eq!(
            pick(Preferences { intelligence: Some(0.9), cost: Some(0.1), ..Default::default() }),
            "claude/claude-sonnet-4-5"
        );
    }

    #[test]
    fn equal_scores_keep_the_users_order() {
        // Only hints that match nothing, and zero priorities: everything ties.
        let prefs = Preferences { hints: vec!["mistral".into()], cost: Some(0.0), ..Default::default() };
        assert_eq!(pick(prefs), "local/llama3.2");
    }

    #[test]
    fn no_configured_model_means_no_choice() {
        assert!(choose(&ModelsSettings::default(), &Preferences::default()).is_none());
    }
}
